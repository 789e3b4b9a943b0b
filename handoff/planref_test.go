package handoff

import "testing"

func TestParsePlanRef(t *testing.T) {
	for _, tc := range []struct {
		ref  string
		want Artifact
		ok   bool
	}{
		{ref: PlanRef(Artifact{Path: "plans/accepted-1.md", Hash: "abc"}), want: Artifact{Path: "plans/accepted-1.md", Hash: "abc"}, ok: true},
		{ref: ""},
		{ref: "work://plans/accepted-1.md"},
		{ref: "plans/accepted-1.md#abc", want: Artifact{Path: "plans/accepted-1.md", Hash: "abc"}, ok: true},
		{ref: "work://plans/a#b.md#abc", want: Artifact{Path: "plans/a", Hash: "b.md#abc"}, ok: true},
	} {
		a, ok := ParsePlanRef(tc.ref)
		if a != tc.want || ok != tc.ok {
			t.Errorf("ParsePlanRef(%q) = %+v, %v; want %+v, %v", tc.ref, a, ok, tc.want, tc.ok)
		}
	}
}
