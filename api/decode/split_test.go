package decode

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// yamlReaderDocs is what apimachinery's YAMLReader makes of data.
func yamlReaderDocs(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, append([]byte(nil), doc...))
	}
}

// TestSplitDocumentsMatchesYAMLReader: the same documents as YAMLReader, on hand-written and
// generated streams (separators with spaces, comments and junk, CRLF, no final newline, empty
// documents).
func TestSplitDocumentsMatchesYAMLReader(t *testing.T) {
	streams := []string{
		"", "\n", "a: 1", "a: 1\n", "---", "---\n", "---\na: 1\n---\n", "a: 1\n---\nb: 2", "a: 1\r\nb: 2\r\n---\r\nc: 3\r\n",
		"--- # first\na: 1\n---   \n\n---\t#x\nb: 2\n", "---x\n", "--- x\n", "a: |\n  text\n  ---\n  more\n", "a\rb\n", "\r\n\r\n",
		" ---\na: 1\n", "a: 1\n---", "a: 1\n--- \r\n", "-- \n---\n----\n", "{\"kind\": \"List\"}\n---\n{}",
	}
	pieces := []string{"a: 1", "b: [x, y]", "---", "--- # c", "---  ", "---x", "", "  ", "#c", "\t", "x: \"---\"", "- --- a"}
	endings := []string{"\n", "\r\n", "\r", ""}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
			b.WriteString(endings[rng.IntN(len(endings))])
		}
		streams = append(streams, b.String())
	}
	for _, s := range streams {
		want, wantErr := yamlReaderDocs([]byte(s))
		got, err := splitDocuments([]byte(s))
		if wantErr != nil {
			require.Error(t, err, "%q: YAMLReader: %v", s, wantErr)
			continue
		}
		require.NoError(t, err, "%q", s)
		require.Equal(t, len(want), len(got), "%q", s)
		for i := range want {
			assert.Equal(t, string(want[i]), string(got[i]), "%q document %d", s, i)
		}
	}
}
