package proposal

// View is what a person sees of one streamed Plan response: the text with
// its proposal blocks hidden from the opening tag on, as it streams (a
// [Scanner] underneath). Write each delta and show what it returns; Done
// ends the response, returns any visible text still held back (a partial
// line that turned out not to be a tag) and makes [View.Result] available.
// A View serves one response (Done is called once); it is not safe for
// concurrent use. A nil *View is the view of a response that cannot
// propose (one outside Plan): it shows every delta as it comes, holds
// nothing back and has no Result.
type View struct {
	sc      *Scanner
	emitted int
	result  *Result
}

// NewView returns the view of one response.
func NewView() *View { return &View{sc: NewScanner()} }

// Write feeds one delta and returns the part of it to show now.
func (v *View) Write(delta string) string {
	if v == nil {
		return delta
	}
	out := v.sc.Write(delta)
	v.emitted += len(out)
	return out
}

// Done ends the response and returns the visible text not yet shown. The
// argument (the whole response text) is not needed: the view has seen
// every delta.
func (v *View) Done(string) string {
	if v == nil {
		return ""
	}
	res := v.sc.Close()
	v.result = &res
	if v.emitted < len(res.Visible) {
		return res.Visible[v.emitted:]
	}
	return ""
}

// Result is the extraction of the whole response (its proposal, if any,
// and diagnostics), or nil before [View.Done].
func (v *View) Result() *Result {
	if v == nil {
		return nil
	}
	return v.result
}
