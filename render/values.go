package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"strings"

	"helm.sh/helm/v3/pkg/strvals"

	"github.com/driverguard/driverguard/api/decode"
	dgvalidation "github.com/driverguard/driverguard/api/validation"
)

// ValuesOptions are the user's value sources, combined with Helm's precedence: files in
// order, then --set-json, --set, --set-string, --set-file (later wins).
type ValuesOptions struct {
	ValueFiles   []string // -f/--values
	JSONValues   []string // --set-json
	Values       []string // --set
	StringValues []string // --set-string
	FileValues   []string // --set-file

	// Stdin is what "-" reads (a values file or a --set-file path); none when nil.
	Stdin io.Reader
	// MaxFileBytes bounds each file read (values files and --set-file files);
	// decode.DefaultMaxValuesBytes when zero.
	MaxFileBytes int64
}

// LoadValues reads and merges the user's values exactly as `helm template` does. Remote value
// files (URLs) are not fetched.
func LoadValues(o ValuesOptions) (map[string]any, error) {
	vals, _, err := Load(context.Background(), o)
	return vals, err
}

// Load reads and merges the user's values exactly as `helm template` does (Helm's
// values.Options.MergeValues with no getters: a URL is read as a local path), but reads every
// file through decode.ReadFile — within MaxFileBytes, from o.Stdin, returning when ctx is
// done — where Helm reads without a bound from os.Stdin. It also returns where each value was
// written (Sources), for messages that quote the user's text.
//
// test/differential compares the result with the real helm binary.
func Load(ctx context.Context, o ValuesOptions) (map[string]any, *Sources, error) {
	limit := o.MaxFileBytes
	if limit <= 0 {
		limit = decode.DefaultMaxValuesBytes
	}
	open := func(path string) (io.ReadCloser, error) {
		if strings.TrimSpace(path) == "-" {
			return decode.Open(ctx, "-", o.Stdin, limit)
		}
		// Helm parses the path as a URL first, and with no getter for its scheme reads it as a
		// local file; a path that is not a URL fails.
		if _, err := url.Parse(path); err != nil {
			return nil, err
		}
		return decode.Open(ctx, path, nil, limit)
	}
	read := func(path string) ([]byte, error) {
		r, err := open(path)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return io.ReadAll(r)
	}
	src := &Sources{}
	base := map[string]any{}
	for _, path := range o.ValueFiles {
		name := decode.Name(strings.TrimSpace(path))
		r, err := open(path)
		if err != nil {
			return nil, nil, fmt.Errorf("reading values: %w", err)
		}
		// The file is parsed as it is read; its first bytes are kept for the source index.
		kept := &prefix{max: maxIndexedBytes}
		current, err := unmarshalValues(io.TeeReader(r, kept))
		r.Close()
		if err != nil {
			if isReadError(err) {
				return nil, nil, fmt.Errorf("reading values: %w", err)
			}
			return nil, nil, fmt.Errorf("failed to parse %s: %w", name, capError(err))
		}
		base = mergeMaps(base, current)
		src.add(&source{kind: FromFile, name: name, data: kept.data, unindexed: kept.over})
	}
	for _, v := range o.JSONValues {
		if err := strvals.ParseJSON(v, base); err != nil {
			return nil, nil, fmt.Errorf("failed parsing --set-json data %s", dgvalidation.Truncate(v, dgvalidation.MaxQuotedValue))
		}
		src.add(&source{kind: FromSetJSON, name: v})
	}
	for _, v := range o.Values {
		if err := strvals.ParseInto(v, base); err != nil {
			return nil, nil, fmt.Errorf("failed parsing --set data: %w", capError(err))
		}
		src.add(&source{kind: FromSet, name: v})
	}
	for _, v := range o.StringValues {
		if err := strvals.ParseIntoString(v, base); err != nil {
			return nil, nil, fmt.Errorf("failed parsing --set-string data: %w", capError(err))
		}
		src.add(&source{kind: FromSetString, name: v})
	}
	for _, v := range o.FileValues {
		reader := func(rs []rune) (any, error) {
			data, err := read(string(rs))
			if err != nil {
				return nil, err
			}
			return string(data), nil
		}
		if err := strvals.ParseIntoFile(v, base, reader); err != nil {
			return nil, nil, fmt.Errorf("failed parsing --set-file data: %w", capError(err))
		}
		src.add(&source{kind: FromSetFile, name: v})
	}
	return base, src, nil
}

// maxIndexedBytes bounds the values files the source index parses for their text and
// positions (YAML nodes cost many times the file's size); larger files get no hints from their
// source.
const maxIndexedBytes = 4 << 20

// prefix keeps what is written to it while it is at most max bytes, and nothing beyond.
type prefix struct {
	data []byte
	max  int
	over bool
}

func (p *prefix) Write(b []byte) (int, error) {
	if !p.over {
		if len(p.data)+len(b) > p.max {
			p.over, p.data = true, nil
		} else {
			p.data = append(p.data, b...)
		}
	}
	return len(b), nil
}

// isReadError reports an error of reading (the limit, the context, the operating system), as
// opposed to one of parsing what was read.
func isReadError(err error) bool {
	var (
		tl *decode.TooLargeError
		pe *fs.PathError
	)
	return errors.As(err, &tl) || errors.As(err, &pe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// mergeMaps is Helm's values merge of two files (pkg/cli/values): maps merge key by key, b
// wins; anything else replaces.
func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if v, ok := v.(map[string]any); ok {
			if bv, ok := out[k]; ok {
				if bv, ok := bv.(map[string]any); ok {
					out[k] = mergeMaps(bv, v)
					continue
				}
			}
		}
		out[k] = v
	}
	return out
}

// maxErrorText bounds an error message of a library that may quote the user's input whole
// (strvals quotes keys, the YAML parser lines).
const maxErrorText = 1000

// cappedError keeps a long error's chain but shortens its text.
type cappedError struct{ err error }

func (e *cappedError) Error() string { return dgvalidation.Truncate(e.err.Error(), maxErrorText) }
func (e *cappedError) Unwrap() error { return e.err }

// capError shortens err's text when it is long. Errors of the bounded reader pass as they are
// (errors.As finds them either way).
func capError(err error) error {
	if len(err.Error()) <= maxErrorText {
		return err
	}
	return &cappedError{err: err}
}
