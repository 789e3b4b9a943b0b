package handoff

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// SkillInfo describes a SKILL.md file found on disk.
type SkillInfo struct {
	Name          string `json:"name"`
	Path          string `json:"path"` // canonical: absolute, symlinks resolved
	Description   string `json:"description"`
	UserInvocable bool   `json:"user_invocable"`
	Disabled      bool   `json:"disabled"`
}

// SkillDirs are where skills live: <workspace>/.planbridge/skills/<name>/SKILL.md
// and <config>/planbridge/skills/<name>/SKILL.md.
func SkillDirs(workspace, configDir string) []string {
	dirs := []string{filepath.Join(workspace, ".planbridge", "skills")}
	if configDir != "" {
		dirs = append(dirs, filepath.Join(configDir, "planbridge", "skills"))
	}
	return dirs
}

// UserConfigDir is the person's configuration directory, whose
// planbridge/skills folder [SkillDirs] names ("" when it has none).
func UserConfigDir() string {
	d, _ := os.UserConfigDir()
	return d
}

// FindSkills lists the skills under dirs (the user-invocable ones first by
// name). Malformed files are skipped.
func FindSkills(dirs []string) []SkillInfo {
	var out []SkillInfo
	for _, d := range dirs {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if info, _, err := LoadSkill(filepath.Join(d, e.Name(), "SKILL.md")); err == nil {
				out = append(out, info)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LoadSkill reads and validates one SKILL.md: YAML-style front matter
// between "---" lines with at least name and description.
func LoadSkill(path string) (SkillInfo, string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return SkillInfo{}, "", fmt.Errorf("skill %s is missing", path)
	}
	abs, _ := filepath.Abs(real)
	b, err := os.ReadFile(abs)
	if err != nil {
		return SkillInfo{}, "", fmt.Errorf("skill %s: %w", path, err)
	}
	text := strings.ReplaceAll(string(b), "\r\n", "\n")
	if !strings.HasPrefix(text, "---\n") {
		return SkillInfo{}, "", fmt.Errorf("skill %s is malformed: no front matter", path)
	}
	fm, body, ok := strings.Cut(text[4:], "\n---")
	if !ok {
		return SkillInfo{}, "", fmt.Errorf("skill %s is malformed: unterminated front matter", path)
	}
	info := SkillInfo{Path: abs, UserInvocable: true}
	sc := bufio.NewScanner(strings.NewReader(fm))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		switch strings.TrimSpace(k) {
		case "name":
			info.Name = v
		case "description":
			info.Description = v
		case "user-invocable":
			info.UserInvocable = v != "false"
		case "disabled", "disable-model-invocation-and-user":
			info.Disabled = v == "true"
		}
	}
	if info.Name == "" || info.Description == "" {
		return SkillInfo{}, "", fmt.Errorf("skill %s is malformed: name and description are required", path)
	}
	return info, strings.TrimLeft(strings.TrimPrefix(body, "\n"), "\n"), nil
}

// ResolveSkills revalidates the selected skills at dispatch: a missing,
// disabled, malformed or no longer user-invocable skill is an error, and no
// request may start.
func ResolveSkills(paths []string) ([]Skill, error) {
	var out []Skill
	seen := map[string]bool{}
	for _, p := range paths {
		info, body, err := LoadSkill(p)
		if err != nil {
			return nil, err
		}
		if info.Disabled {
			return nil, fmt.Errorf("skill %s is disabled", info.Name)
		}
		if !info.UserInvocable {
			return nil, fmt.Errorf("skill %s is no longer user-invocable", info.Name)
		}
		if seen[info.Path] {
			continue
		}
		seen[info.Path] = true
		out = append(out, Skill{Name: info.Name, Path: info.Path, Body: body})
	}
	return out, nil
}
