package share

import "fmt"

// Tier is what a link may do. Higher tiers include the lower ones.
type Tier int

// Link tiers, weakest first.
const (
	View  Tier = iota + 1 // read-only
	Full                  // view + feedback, queued prompt, accept Here
	Owner                 // full + accept Worktree
)

// Tiers lists every tier, weakest first.
var tiers = [...]Tier{View, Full, Owner}

func (t Tier) String() string {
	switch t {
	case View:
		return "view"
	case Full:
		return "full"
	case Owner:
		return "owner"
	}
	return fmt.Sprintf("Tier(%d)", int(t))
}

// ParseTier parses "view", "full" or "owner".
func ParseTier(s string) (Tier, error) {
	for _, t := range tiers {
		if t.String() == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("%w %q: want view, full or owner", ErrBadTier, s)
}

// MarshalText encodes the tier as its name.
func (t Tier) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText decodes a tier name.
func (t *Tier) UnmarshalText(b []byte) error {
	v, err := ParseTier(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}
