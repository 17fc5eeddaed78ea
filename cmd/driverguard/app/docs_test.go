package app

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docExample is one `$ driverguard ...` line of a ```console block and the output printed under
// it; a line "..." in the output stands for any number of lines.
type docExample struct {
	line int
	args []string
	code int
	want []string
}

// docFile is a fenced block preceded by <!-- file: PATH -->: it must be that file, verbatim.
type docFile struct {
	line    int
	path    string
	content string
}

var exitsRE = regexp.MustCompile(`\s+#\s*exits\s+(\d+)\s*$`)

func parseDoc(t *testing.T, path string) ([]docExample, []docFile) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var (
		examples []docExample
		files    []docFile
		inBlock  string // "console", "file" or "other" inside a fence
		pending  string // the path of a <!-- file: --> marker
		cur      *docExample
		file     *docFile
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case inBlock == "" && strings.HasPrefix(line, "<!-- file: "):
			pending = strings.TrimSuffix(strings.TrimPrefix(line, "<!-- file: "), " -->")
		case inBlock == "" && strings.HasPrefix(line, "```"):
			switch {
			case pending != "":
				inBlock, file, pending = "file", &docFile{line: n, path: pending}, ""
			case line == "```console":
				inBlock = "console"
			default:
				inBlock = "other"
			}
		case inBlock != "" && line == "```":
			if cur != nil {
				examples = append(examples, *cur)
				cur = nil
			}
			if file != nil {
				files = append(files, *file)
				file = nil
			}
			inBlock = ""
		case inBlock == "file":
			file.content += line + "\n"
		case inBlock == "console" && strings.HasPrefix(line, "$ "):
			if cur != nil {
				examples = append(examples, *cur)
			}
			cmd := strings.TrimPrefix(line, "$ ")
			code := ExitOK
			if m := exitsRE.FindStringSubmatch(cmd); m != nil {
				code, _ = strconv.Atoi(m[1])
				cmd = strings.TrimSpace(exitsRE.ReplaceAllString(cmd, ""))
			}
			fields := strings.Fields(cmd)
			require.Equal(t, "driverguard", fields[0], "%s:%d: only driverguard commands are run", path, n)
			cur = &docExample{line: n, args: fields[1:], code: code}
		case inBlock == "console" && cur != nil:
			cur.want = append(cur.want, line)
		}
	}
	require.NoError(t, sc.Err())
	require.Empty(t, inBlock, "%s: an unclosed code block", path)
	return examples, files
}

// matchLines compares output lines with the expected ones, where a "..." line matches any
// number of lines.
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
	return len(got) > 0 && got[0] == want[0] && matchLines(want[1:], got[1:])
}

// TestGuides runs every command of the guides in docs/ from the repository root and compares
// its output and exit code with the guide, and checks that every file a guide shows is the
// file in the repository.
func TestGuides(t *testing.T) {
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	for _, tc := range []struct {
		doc                   string
		minExamples, minFiles int
	}{
		{"policy-authoring.md", 4, 3},
		{"plan.md", 4, 0},
		{"audit.md", 2, 0},
	} {
		t.Run(tc.doc, func(t *testing.T) {
			doc := filepath.Join(root, "docs", tc.doc)
			examples, files := parseDoc(t, doc)
			require.GreaterOrEqual(t, len(examples), tc.minExamples)
			require.GreaterOrEqual(t, len(files), tc.minFiles)
			t.Chdir(root)
			name := "docs/" + tc.doc
			for _, f := range files {
				got, err := os.ReadFile(f.path)
				require.NoError(t, err, "%s:%d", name, f.line)
				assert.Equal(t, string(got), f.content, "%s:%d shows %s differently", name, f.line, f.path)
			}
			for _, ex := range examples {
				r := run(t, "", ex.args...)
				assert.Equal(t, ex.code, r.code, "%s:%d: exit code of driverguard %s\n%s", name, ex.line, strings.Join(ex.args, " "), r.stderr)
				assert.Empty(t, r.stderr, "%s:%d", name, ex.line)
				got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
				assert.True(t, matchLines(ex.want, got), "%s:%d: driverguard %s printed\n%s\nthe guide shows\n%s",
					name, ex.line, strings.Join(ex.args, " "), r.stdout, strings.Join(ex.want, "\n"))
			}
		})
	}
}
