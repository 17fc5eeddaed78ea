package docs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// command is one command line a doc shows: a `$ ` line of a ```console block, or a line of a
// ```sh (bash, shell) block that is not a comment, with its `\` continuation lines.
type command struct {
	doc  string // "README.md", "docs/plan.md"
	line int
	// text is the command as written, continuation lines included, without its comment: what
	// bash runs.
	text    string
	comment string
	exit    int      // `# exits N`; 0 otherwise
	console bool     // from a ```console block: output is what `want` shows
	want    []string // console: the lines shown under it ("..." is any number of lines); nil: none shown
	helm    int      // which Helm `helm` is: 3 or 4
}

func (c command) String() string { return fmt.Sprintf("%s:%d: %s", c.doc, c.line, c.text) }

// block is one fenced block of commands.
type block struct {
	doc  string
	line int
	cmds []command
}

// shownFile is a fenced block after <!-- file: PATH -->: the content of PATH. A PATH of the
// repository must be that file byte for byte; any other is a file the doc assumes the user has,
// written into the sandbox with exactly this content.
type shownFile struct {
	doc     string
	line    int
	path    string
	content string
}

// parsed is what the docs show.
type parsed struct {
	blocks []block
	files  []shownFile
}

var (
	fileMarker = regexp.MustCompile(`^<!-- file: (\S+) -->$`)
	helmMarker = regexp.MustCompile(`^<!-- helm: ([34]) -->$`)
	// A comment line starting "# Helm 3" or "# Helm 4" switches what `helm` is for the lines
	// after it in its block.
	helmComment = regexp.MustCompile(`^#\s*Helm ([34])\b`)
	// The one convention for an expected exit code: the command's comment starts "exits N".
	exitsComment = regexp.MustCompile(`^exits (\d+)\b`)
	// Languages whose blocks hold commands.
	shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true}
)

// parseDoc reads the fenced blocks of the markdown file root/doc.
func parseDoc(root, doc string) (parsed, error) {
	f, err := os.Open(filepath.Join(root, doc))
	if err != nil {
		return parsed{}, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return parsed{}, fmt.Errorf("reading %s: %w", doc, err)
	}

	var (
		out         parsed
		pendingFile string
		pendingHelm = 3
	)
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := fileMarker.FindStringSubmatch(line); m != nil {
			pendingFile = m[1]
			continue
		}
		if m := helmMarker.FindStringSubmatch(line); m != nil {
			pendingHelm, _ = strconv.Atoi(m[1])
			continue
		}
		if !strings.HasPrefix(line, "```") {
			if strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "<!--") {
				pendingFile, pendingHelm = "", 3
			}
			continue
		}
		lang := strings.TrimSpace(strings.TrimPrefix(line, "```"))
		start := i + 1
		end := start
		for end < len(lines) && strings.TrimRight(lines[end], " ") != "```" {
			end++
		}
		if end == len(lines) {
			return parsed{}, fmt.Errorf("%s:%d: the block is not closed", doc, i+1)
		}
		body := lines[start:end]
		switch {
		case pendingFile != "":
			out.files = append(out.files, shownFile{doc: doc, line: i + 1, path: pendingFile, content: strings.Join(body, "\n") + "\n"})
		case lang == "console":
			b, err := parseConsole(doc, start+1, body, pendingHelm)
			if err != nil {
				return parsed{}, err
			}
			out.blocks = append(out.blocks, b)
		case shellLangs[lang]:
			bs, err := parseShell(doc, start+1, body, pendingHelm)
			if err != nil {
				return parsed{}, err
			}
			out.blocks = append(out.blocks, bs...)
		default:
			// A command shown in a block of another kind would never run.
			for j, l := range body {
				if strings.HasPrefix(l, "$ ") {
					return parsed{}, fmt.Errorf("%s:%d: a `$ ` command in a ```%s block, which test/docs does not run: make it a ```console block", doc, start+1+j, lang)
				}
			}
		}
		pendingFile, pendingHelm = "", 3
		i = end
	}
	return out, nil
}

// parseShell: every line that is not a comment is a command; a line ending in `\` continues
// on the next. A `# Helm 3` or `# Helm 4` comment line starts a part of its own (the way to
// do the same with the other Helm): a block of its own, on the example cluster anew.
func parseShell(doc string, first int, body []string, helm int) ([]block, error) {
	var out []block
	b := block{doc: doc, line: first - 1}
	for i := 0; i < len(body); i++ {
		line := body[i]
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			if m := helmComment.FindStringSubmatch(trimmed); m != nil {
				helm, _ = strconv.Atoi(m[1])
				if len(b.cmds) > 0 {
					out = append(out, b)
				}
				b = block{doc: doc, line: first + i}
			}
			continue
		}
		n := first + i
		text := line
		for strings.HasSuffix(text, `\`) && i+1 < len(body) {
			i++
			text += "\n" + body[i]
		}
		c, err := newCommand(doc, n, text, helm)
		if err != nil {
			return nil, err
		}
		b.cmds = append(b.cmds, c)
	}
	if len(b.cmds) > 0 {
		out = append(out, b)
	}
	return out, nil
}

// parseConsole: a `$ ` line is a command; the lines under it, up to the next `$ ` line, are
// its output, except indented `#` lines right under it, which continue its comment.
func parseConsole(doc string, first int, body []string, helm int) (block, error) {
	b := block{doc: doc, line: first - 1}
	var cur *command
	inComment := false
	for i, line := range body {
		if rest, ok := strings.CutPrefix(line, "$ "); ok {
			c, err := newCommand(doc, first+i, rest, helm)
			if err != nil {
				return block{}, err
			}
			c.console = true
			b.cmds = append(b.cmds, c)
			cur = &b.cmds[len(b.cmds)-1]
			inComment = true
			continue
		}
		if cur == nil {
			return block{}, fmt.Errorf("%s:%d: a console block must start with a `$ ` line", doc, first+i)
		}
		if inComment && strings.HasPrefix(line, " ") && strings.HasPrefix(strings.TrimSpace(line), "#") {
			cur.comment += " " + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
			continue
		}
		inComment = false
		cur.want = append(cur.want, line)
	}
	return b, nil
}

func newCommand(doc string, line int, written string, helm int) (command, error) {
	text, comment := splitComment(written)
	c := command{doc: doc, line: line, text: strings.TrimRight(text, " \t"), comment: comment, helm: helm}
	if c.text == "" {
		return command{}, fmt.Errorf("%s:%d: an empty command", doc, line)
	}
	if m := exitsComment.FindStringSubmatch(comment); m != nil {
		c.exit, _ = strconv.Atoi(m[1])
	}
	return c, nil
}

// splitComment cuts a shell line at its comment: a `#` outside quotes that starts a word.
func splitComment(s string) (text, comment string) {
	var quote rune
	prev := ' '
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (prev == ' ' || prev == '\t' || prev == '\n'):
			return s[:i], strings.TrimSpace(strings.TrimPrefix(s[i:], "#"))
		}
		prev = r
	}
	return s, ""
}

// matchLines compares output lines with the expected ones, where a "..." line matches any
// number of lines and a line ending in " ..." any line that starts with what is before it.
func matchLines(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for i := 0; i <= len(got); i++ {
			if matchLines(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && matchLine(want[0], got[0]) && matchLines(want[1:], got[1:])
}

func matchLine(want, got string) bool {
	if prefix, ok := strings.CutSuffix(want, " ..."); ok {
		return strings.HasPrefix(got, prefix+" ")
	}
	return got == want
}

// usage is a driverguard command line shown outside a block: an inline code span starting
// "driverguard " or "helm driverguard ", or a command of the README's "Commands" table (the
// span in a row's first cell). Its subcommands and flags must exist; it is not run.
type usage struct {
	doc  string
	line int
	text string // "driverguard ...", usage notation ([optional], a\|b) included
}

func (u usage) String() string { return fmt.Sprintf("%s:%d: `%s`", u.doc, u.line, u.text) }

var codeSpan = regexp.MustCompile("`([^`]+)`")

// parseUsages finds the usages of the markdown file root/doc.
func parseUsages(root, doc string) ([]usage, error) {
	data, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		return nil, err
	}
	var (
		out      []usage
		inBlock  bool
		commands bool // in the README's "## Commands" section
		prose    []string
		proseAt  []int // the line number of each line of prose
	)
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			continue
		}
		if strings.HasPrefix(line, "#") {
			commands = doc == "README.md" && line == "## Commands"
		}
		if commands && strings.HasPrefix(line, "| `") {
			first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
			for _, m := range codeSpan.FindAllStringSubmatch(first, -1) {
				out = append(out, usage{doc: doc, line: n, text: "driverguard " + m[1]})
			}
			continue
		}
		prose = append(prose, line)
		proseAt = append(proseAt, n)
	}
	// Code spans may wrap across lines: search the prose as one text.
	text := strings.Join(prose, "\n")
	for _, loc := range codeSpan.FindAllStringSubmatchIndex(text, -1) {
		span := strings.Join(strings.Fields(text[loc[2]:loc[3]]), " ")
		span = strings.TrimPrefix(span, "helm ")
		if !strings.HasPrefix(span, "driverguard ") {
			continue
		}
		out = append(out, usage{doc: doc, line: proseAt[strings.Count(text[:loc[0]], "\n")], text: span})
	}
	return out, nil
}
