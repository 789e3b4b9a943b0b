package proposal

import (
	"crypto/sha256"
	"encoding/hex"
)

// Diagnostic kinds.
const (
	// KindWarning marks a malformed proposal: tag lines were written but no
	// complete nonblank block could be extracted.
	KindWarning = "warning"
	// KindHint marks tags that appear only inside code fences.
	KindHint = "hint"
)

// A Proposal is one complete, nonblank <proposed_plan> block.
type Proposal struct {
	// Title is the proposal's title as [Parse] finds it.
	Title string
	// Body is the text between the tags: line endings normalised to LF,
	// dedented by the opening tag line's indentation, leading and trailing
	// blank lines dropped, no final line feed. Never blank.
	Body string
	// Hash is the lowercase hex sha256 of Body.
	Hash string
}

// A Diagnostic tells the model (and the person) why a response that meant to
// propose a plan did not yield one.
type Diagnostic struct {
	Kind    string // KindWarning or KindHint
	Message string
}

// A Result is what one response yields.
type Result struct {
	// Proposal is the last complete nonblank block, or nil.
	Proposal *Proposal
	// Diagnostics is nil when Proposal is set, and otherwise holds at most
	// one entry: a warning when a tag line stands outside code fences, else a
	// hint when tag lines appear only inside fences, else nothing (inline
	// mentions of the tag never produce one).
	Diagnostics []Diagnostic
	// Visible is the normalised text with every block hidden: from its
	// opening tag line (keeping prose glued before the tag, and that line's
	// line feed) through its closing tag line. An unterminated block hides
	// everything from its opening tag to the end.
	Visible string
}

// Extract finds the proposal in a complete response.
//
// Rules (see the package documentation for the full list): CRLF and lone CR
// become LF; the opening tag line ends with exactly "<proposed_plan>" (then
// only spaces and tabs), optionally after indentation or glued prose; the
// closing tag line is exactly "</proposed_plan>" apart from surrounding
// spaces and tabs; a second opening tag before a close restarts the block;
// tags inside a fenced code block that begins outside a block are ignored, and
// a fenced block inside a block cannot end it; the last complete nonblank
// block wins.
//
// Extract(s) equals feeding s to a [Scanner] in any chunking and calling
// [Scanner.Close].
func Extract(text string) Result {
	s := NewScanner()
	s.Write(text)
	return s.Close()
}

func newProposal(body string) *Proposal {
	return &Proposal{Title: Parse(body).Title, Body: body, Hash: HashBody(body)}
}

// HashBody is the proposal hash of a body: the lowercase hex sha256.
func HashBody(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

// reason is the cause named by a warning.
type reason uint8

const (
	reasonUnterminated reason = iota
	reasonCloseNotAlone
	reasonOpenNotEnding
	reasonOpenAttr
	reasonCase
	reasonBlank
	reasonStray
	numReasons
)

func (r reason) String() string {
	switch r {
	case reasonUnterminated:
		return "The <proposed_plan> block is never closed: no line holding only </proposed_plan> follows the opening tag."
	case reasonCloseNotAlone:
		return "The closing tag is not alone on its line: text stands before or after </proposed_plan>."
	case reasonOpenNotEnding:
		return "The opening tag does not end its line: text follows <proposed_plan> on the same line."
	case reasonOpenAttr:
		return "The opening tag carries attributes or extra characters (like <proposed_plan id=1>); it must be exactly <proposed_plan>."
	case reasonCase:
		return "A tag is not in lowercase; the tags are exactly <proposed_plan> and </proposed_plan>."
	case reasonBlank:
		return "The <proposed_plan> block is blank: there is no plan between the tags."
	case reasonStray:
		return "A </proposed_plan> closing tag has no opening tag before it."
	}
	return "The proposal is malformed."
}

const resendAdvice = " No plan was taken and Plan mode stays on. Resend the full plan in one block:" +
	" <proposed_plan> at the end of its own line, the plan, then </proposed_plan> alone on its own line."

const fencedHint = "The plan is inside a code fence, so it was not taken as a proposal." +
	" To propose it, write the <proposed_plan> block outside any code fence."
