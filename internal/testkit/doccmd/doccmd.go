// Package doccmd reads the commands the project's Markdown documents show,
// so that tests can run every one of them (cmd/headroom's TestDocCommands,
// cmd/headroom-server's TestDocServerCommands) and the documents cannot
// drift from the code. It is used by tests only.
//
// The conventions it reads:
//   - Commands are the lines of fenced blocks marked sh. A line ending in a
//     backslash continues on the next; # starts a comment outside quotes.
//   - A comment naming an exit code ("exit 3", "exit code 3") says the
//     command is expected to end with it (0 otherwise); one naming an HTTP
//     status (201, 404 …) says what a curl line expects (2xx otherwise).
//   - `export NAME=value` sets NAME for the rest of the block, and NAME=value
//     before a command sets it for that command; $NAME expands to it.
//     $(openssl rand -hex N) expands to N random bytes in hex.
//   - A plain fenced block (no language, or text) right after a sh block of
//     one command is that command's output. A line "…" in it stands for any
//     number of lines; the other lines must be the output's, in order, and
//     without a "…" between them, consecutive.
package doccmd

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Block is one sh block of a document.
type Block struct {
	File     string // relative to the root
	Line     int    // of the opening fence, 1-based
	Commands []Command
	// Output is the block of output shown after a one-command block (nil
	// when there is none).
	Output *Output
}

// Command is one command line of a block.
type Command struct {
	File string
	Line int    // 1-based, of its first line
	Text string // as written, continuation lines joined, without the comment
	// Comment is the text after #, if any.
	Comment string
	// Args are the words after expansion; Env the NAME=value assignments
	// before them and the block's exports so far.
	Args []string
	Env  map[string]string
	// Export is true for `export NAME=value` lines, which run nothing.
	Export bool
}

// Where names the command's place, for test messages.
func (c Command) Where() string { return fmt.Sprintf("%s:%d: %s", c.File, c.Line, c.Text) }

// ExitCode is the exit code the comment names, else 0.
func (c Command) ExitCode() int {
	if m := exitRE.FindStringSubmatch(c.Comment); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// HTTPStatus is the HTTP status the comment names (0: any 2xx).
func (c Command) HTTPStatus() int {
	if m := statusRE.FindStringSubmatch(c.Comment); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

var (
	exitRE   = regexp.MustCompile(`\bexit (?:code )?(\d+)\b`)
	statusRE = regexp.MustCompile(`\b([2-5]\d\d)\b`)
)

// Output is a command's output as a document shows it.
type Output struct {
	File string
	// Start and End are the 1-based lines of its content (End is the last
	// one; End < Start for an empty block).
	Start, End int
	Lines      []string
}

// Ellipsis is the line that stands for any number of output lines.
const Ellipsis = "…"

// Documents lists the Markdown files below root (relative paths, sorted),
// hidden directories and node_modules (web/'s npm packages, installed by
// npm ci, not the project's documents) left out.
func Documents(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// Read returns the sh blocks of the document at root/file.
func Read(root, file string) ([]Block, error) {
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	var out []Block
	for i := 0; i < len(lines); i++ {
		fence, lang, ok := openFence(lines[i])
		if !ok {
			continue
		}
		end := closeFence(lines, i+1, fence)
		if lang != "sh" {
			i = end
			continue
		}
		blk := Block{File: file, Line: i + 1}
		cmds, err := parseCommands(file, lines[i+1:end], i+2)
		if err != nil {
			return nil, err
		}
		blk.Commands = cmds
		i = end
		// The output block: the next non-blank line opens a plain fence.
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j < len(lines) && runnable(cmds) == 1 {
			if f2, lang2, ok := openFence(lines[j]); ok && (lang2 == "" || lang2 == "text") {
				e2 := closeFence(lines, j+1, f2)
				blk.Output = &Output{File: file, Start: j + 2, End: e2, Lines: append([]string(nil), lines[j+1:e2]...)}
				i = e2
			}
		}
		out = append(out, blk)
	}
	return out, nil
}

func runnable(cmds []Command) int {
	n := 0
	for _, c := range cmds {
		if !c.Export {
			n++
		}
	}
	return n
}

// openFence reports whether line opens a fenced block, its fence and
// language.
func openFence(line string) (fence, lang string, ok bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || !strings.HasPrefix(t, "```") {
		return "", "", false
	}
	n := len(t) - len(strings.TrimLeft(t, "`"))
	return t[:n], strings.TrimSpace(t[n:]), true
}

// closeFence returns the index of the line closing fence at or after from
// (len(lines) when the document ends first).
func closeFence(lines []string, from int, fence string) int {
	for k := from; k < len(lines); k++ {
		if strings.TrimSpace(lines[k]) == fence {
			return k
		}
	}
	return len(lines)
}

// parseCommands reads the commands of a block whose first line is line
// first of the file.
func parseCommands(file string, lines []string, first int) ([]Command, error) {
	vars := map[string]string{}
	var out []Command
	for i := 0; i < len(lines); i++ {
		start := i
		text := lines[i]
		for strings.HasSuffix(strings.TrimRight(text, " "), "\\") && i+1 < len(lines) {
			text = strings.TrimSuffix(strings.TrimRight(text, " "), "\\") + " " + strings.TrimSpace(lines[i+1])
			i++
		}
		words, comment, err := splitWords(text, vars)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, first+start, err)
		}
		if len(words) == 0 {
			continue
		}
		c := Command{File: file, Line: first + start, Text: strings.TrimSpace(cutComment(text)), Comment: comment, Env: map[string]string{}}
		for k, v := range vars {
			c.Env[k] = v
		}
		if words[0] == "export" {
			for _, w := range words[1:] {
				name, v, ok := strings.Cut(w, "=")
				if !ok {
					return nil, fmt.Errorf("%s:%d: export %q: want NAME=value", file, first+start, w)
				}
				vars[name] = v
			}
			c.Export, c.Args = true, words
			out = append(out, c)
			continue
		}
		for len(words) > 0 && assignRE.MatchString(words[0]) {
			name, v, _ := strings.Cut(words[0], "=")
			c.Env[name] = v
			words = words[1:]
		}
		c.Args = words
		out = append(out, c)
	}
	return out, nil
}

var (
	assignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	varRE    = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)|\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
	randRE   = regexp.MustCompile(`\$\(openssl rand -hex (\d+)\)`)
)

// cutComment is text without its comment.
func cutComment(text string) string {
	_, _, at := scanComment(text)
	if at < 0 {
		return text
	}
	return text[:at]
}

// outsideQuotes calls fn with each rune of s that is not inside single
// or double quotes, and its index, until fn returns true; it reports
// whether one did.
func outsideQuotes(s string, fn func(i int, r rune) bool) bool {
	var quote rune
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case fn(i, r):
			return true
		}
	}
	return false
}

// scanComment finds the # that starts a comment outside quotes: the text
// before it, the comment, and its index (-1 without one).
func scanComment(text string) (string, string, int) {
	at := -1
	outsideQuotes(text, func(i int, r rune) bool {
		if r == '#' && (i == 0 || text[i-1] == ' ' || text[i-1] == '\t') {
			at = i
			return true
		}
		return false
	})
	if at < 0 {
		return text, "", -1
	}
	return text[:at], strings.TrimSpace(text[at+1:]), at
}

// splitWords splits a command line into words as a shell would for these
// documents: single and double quotes, $NAME inside double quotes and
// bare, $(openssl rand -hex N); no pipes, redirections or globbing.
func splitWords(text string, vars map[string]string) (words []string, comment string, err error) {
	body, comment, _ := scanComment(text)
	body = randRE.ReplaceAllStringFunc(body, func(m string) string {
		n, _ := strconv.Atoi(randRE.FindStringSubmatch(m)[1])
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	})
	if !quotedOnly(body, "|<>;&`") || strings.Contains(body, "$(") {
		return nil, "", fmt.Errorf("shell operators, redirections and substitutions are not supported in documented commands: %q", body)
	}
	expand := func(s string) string {
		return varRE.ReplaceAllStringFunc(s, func(m string) string {
			sub := varRE.FindStringSubmatch(m)
			name := sub[1] + sub[2]
			if v, ok := vars[name]; ok {
				return v
			}
			return os.Getenv(name)
		})
	}
	var cur strings.Builder
	inWord := false
	sc := bufio.NewReader(strings.NewReader(body))
	for {
		r, _, err := sc.ReadRune()
		if err != nil {
			break
		}
		switch r {
		case ' ', '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case '\'':
			inWord = true
			s, err := sc.ReadString('\'')
			if err != nil {
				return nil, "", fmt.Errorf("unterminated ' in %q", body)
			}
			cur.WriteString(strings.TrimSuffix(s, "'"))
		case '"':
			inWord = true
			s, err := sc.ReadString('"')
			if err != nil {
				return nil, "", fmt.Errorf("unterminated \" in %q", body)
			}
			cur.WriteString(expand(strings.TrimSuffix(s, `"`)))
		default:
			inWord = true
			var w strings.Builder
			w.WriteRune(r)
			for {
				r2, _, err := sc.ReadRune()
				if err != nil {
					break
				}
				if r2 == ' ' || r2 == '\t' || r2 == '\'' || r2 == '"' {
					_ = sc.UnreadRune()
					break
				}
				w.WriteRune(r2)
			}
			cur.WriteString(expand(w.String()))
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, comment, nil
}

// quotedOnly reports whether every one of chars in s sits inside quotes.
func quotedOnly(s, chars string) bool {
	return !outsideQuotes(s, func(_ int, r rune) bool { return strings.ContainsRune(chars, r) })
}
