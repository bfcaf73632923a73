package doccmd

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// normalise trims trailing spaces of every line and the trailing blank
// lines.
func normalise(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(l, " \t\r")
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// segments splits the shown lines at the "…" lines: the runs of lines
// that must appear together, and whether the output may have lines before
// the first and after the last.
func segments(shown []string) (segs [][]string, openStart, openEnd bool) {
	var cur []string
	for i, l := range shown {
		if strings.TrimSpace(l) == Ellipsis {
			if i == 0 {
				openStart = true
			}
			if len(cur) > 0 {
				segs = append(segs, cur)
				cur = nil
			}
			openEnd = true
			continue
		}
		openEnd = false
		cur = append(cur, l)
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs, openStart, openEnd
}

// Match reports whether got (a command's output) is what o shows, and
// when not, the first shown line it could not place.
func (o *Output) Match(got string) (ok bool, why string) {
	shown := normalise(o.Lines)
	actual := normalise(strings.Split(got, "\n"))
	segs, openStart, openEnd := segments(shown)
	pos := 0
	for si, seg := range segs {
		at := -1
		for k := pos; k+len(seg) <= len(actual); k++ {
			if equalLines(actual[k:k+len(seg)], seg) {
				at = k
				break
			}
			if si == 0 && !openStart {
				break // the first segment must start the output
			}
		}
		if at < 0 {
			if si == 0 && !openStart {
				for i := range seg {
					if i >= len(actual) {
						return false, fmt.Sprintf("the output ends before shown line %d, %q", i+1, seg[i])
					}
					if actual[i] != seg[i] {
						return false, fmt.Sprintf("shown line %d is %q, the output's %q", i+1, seg[i], actual[i])
					}
				}
			}
			return false, fmt.Sprintf("shown lines from %q on are not in the output (in order)", seg[0])
		}
		pos = at + len(seg)
	}
	if !openEnd && pos != len(actual) {
		return false, fmt.Sprintf("the output goes on after the shown lines: %q", actual[pos])
	}
	return true, ""
}

func equalLines(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Rewrite returns o's lines updated from got: the whole output when o
// shows it whole, else each run of shown lines replaced by as many output
// lines from the first one with the same first two words (its key) on.
func (o *Output) Rewrite(got string) []string {
	actual := normalise(strings.Split(got, "\n"))
	shown := normalise(o.Lines)
	segs, openStart, openEnd := segments(shown)
	if len(segs) <= 1 && !openStart && !openEnd {
		return actual
	}
	var out []string
	if openStart {
		out = append(out, Ellipsis)
	}
	pos := 0
	for i, seg := range segs {
		at := pos
		for k := pos; k < len(actual); k++ {
			if key(actual[k]) == key(seg[0]) {
				at = k
				break
			}
		}
		end := min(at+len(seg), len(actual))
		out = append(out, actual[at:end]...)
		pos = end
		if i < len(segs)-1 || openEnd {
			out = append(out, Ellipsis)
		}
	}
	return out
}

func key(line string) string {
	f := strings.Fields(line)
	return strings.Join(f[:min(2, len(f))], " ")
}

// Replacement is new content for an output block.
type Replacement struct {
	Output *Output
	Lines  []string
}

// Apply writes the replacements into their files under root, last block
// first so that the line numbers of the others stay valid.
func Apply(root string, reps []Replacement) error {
	byFile := map[string][]Replacement{}
	for _, r := range reps {
		byFile[r.Output.File] = append(byFile[r.Output.File], r)
	}
	for file, rs := range byFile {
		p := filepath.Join(root, file)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		lines := strings.Split(string(b), "\n")
		sort.Slice(rs, func(i, j int) bool { return rs[i].Output.Start > rs[j].Output.Start })
		for _, r := range rs {
			s, e := r.Output.Start-1, r.Output.End // the content is lines[s:e]
			lines = append(lines[:s], append(append([]string(nil), r.Lines...), lines[e:]...)...)
		}
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			return err
		}
	}
	return nil
}
