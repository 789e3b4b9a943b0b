package handoff

// FeedbackSize is how many bytes a person's revision request carries:
// their words and the text of every line comment (what the bound on a
// person's input applies to).
func FeedbackSize(text string, comments []LineComment) int {
	n := len(text)
	for _, c := range comments {
		n += len(c.Text)
	}
	return n
}

// MaskFeedback applies mask (the caller's redaction) to a revision
// request as it enters: to the person's words and to each comment's text,
// in a copy, so the caller's comments are left as they were.
func MaskFeedback(text string, comments []LineComment, mask func(string) string) (string, []LineComment) {
	out := append([]LineComment(nil), comments...)
	for i := range out {
		out[i].Text = mask(out[i].Text)
	}
	return mask(text), out
}
