package decode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Default limits of the CLI's inputs (README.md "Limits": every input is read through a size limit).
const (
	// DefaultMaxValuesBytes bounds a values file, a --set-file file and a policy file: values
	// are written by people; 16 MiB is far beyond any real driver block.
	DefaultMaxValuesBytes int64 = 16 << 20
	// DefaultMaxInventoryBytes bounds a node, driver, cluster-policy or workload file:
	// `kubectl get nodes -o yaml` of 10,000 real nodes is about 300 MB, `kubectl get
	// pods,pdb,rs,deploy,sts -A -o json` of 50,000 pods about 600 MB (managed fields included).
	DefaultMaxInventoryBytes int64 = 1 << 30
)

// StdinName names standard input ("-") in messages.
const StdinName = "<stdin>"

// TooLargeError reports an input that holds more bytes than its limit allows. Nothing beyond
// the limit is read.
type TooLargeError struct {
	// Name is the file as given ("<stdin>" for "-").
	Name string
	// Limit is the limit in bytes.
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than the limit of %s", e.Name, FormatBytes(e.Limit))
}

// FormatBytes writes a byte count for people: "16Mi (16777216 bytes)", or "1000 bytes" when
// it is not a whole number of KiB.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		size   int64
		suffix string
	}{{1 << 40, "Ti"}, {1 << 30, "Gi"}, {1 << 20, "Mi"}, {1 << 10, "Ki"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s (%d bytes)", n/u.size, u.suffix, n)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// ParseBytes reads a size limit: a Kubernetes quantity ("16Mi", "1G", "512Ki") or a plain
// number of bytes. It must be positive.
func ParseBytes(s string) (int64, error) {
	q, err := resource.ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("not a size: use bytes or a quantity such as 16Mi or 1Gi")
	}
	n, ok := q.AsInt64()
	if !ok {
		// A fraction ("0.5Ki") rounds up; a value beyond int64 is refused.
		if q.Cmp(*resource.NewQuantity(1<<62, resource.BinarySI)) > 0 {
			return 0, fmt.Errorf("too large: at most %s", FormatBytes(1<<62))
		}
		n = q.Value()
	}
	if n <= 0 {
		return 0, fmt.Errorf("must be positive")
	}
	return n, nil
}

// Open opens path for reading ("-" reads stdin) through limit: a Read past limit bytes fails
// with a *TooLargeError. Opening and every Read return when ctx is done, even while the
// operating system blocks (a FIFO without a writer, a terminal, a stalled pipe): the
// goroutine that waits for it is then left behind, to end with the process.
func Open(ctx context.Context, path string, stdin io.Reader, limit int64) (io.ReadCloser, error) {
	r, _, err := open(ctx, path, stdin, limit)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// ReadFile reads all of path ("-" reads stdin) as Open does. A regular file larger than limit
// fails before anything is read.
func ReadFile(ctx context.Context, path string, stdin io.Reader, limit int64) ([]byte, error) {
	return readAll(ctx, path, stdin, limit, nil)
}

// ReadText reads all of path ("-" reads stdin) as ReadFile does, for a file that must be YAML
// or JSON: a NUL byte ends the reading at once, as in ReadDocuments.
func ReadText(ctx context.Context, path string, stdin io.Reader, limit int64) ([]byte, error) {
	name := Name(path)
	return readAll(ctx, path, stdin, limit, func(r io.Reader) io.Reader { return &noNUL{r: r, name: name} })
}

// ReadDocuments reads the objects of path ("-" reads stdin) as Documents does, through
// Open's limit and cancellation. A NUL byte, which neither YAML nor JSON allows, ends the
// reading at once (-f /dev/zero is not read up to the limit).
func ReadDocuments(ctx context.Context, path string, stdin io.Reader, limit int64) ([]Document, error) {
	data, err := ReadText(ctx, path, stdin, limit)
	if err != nil {
		return nil, err
	}
	return parseDocuments(data, Name(path))
}

// readAll reads all of path through open, and wrap when given.
func readAll(ctx context.Context, path string, stdin io.Reader, limit int64, wrap func(io.Reader) io.Reader) ([]byte, error) {
	r, size, err := open(ctx, path, stdin, limit)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var src io.Reader = r
	if wrap != nil {
		src = wrap(r)
	}
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size) + 1) // one Read past the end finds EOF without growing
	}
	if _, err := buf.ReadFrom(src); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// noNUL fails a read that meets a NUL byte.
type noNUL struct {
	r    io.Reader
	name string
	off  int64
}

func (n *noNUL) Read(p []byte) (int, error) {
	k, err := n.r.Read(p)
	if i := bytes.IndexByte(p[:k], 0); i >= 0 {
		return i, fmt.Errorf("%s: a NUL byte at offset %d: not a YAML or JSON file", n.name, n.off+int64(i))
	}
	n.off += int64(k)
	return k, err
}

// Name is how messages name path: "<stdin>" for "-".
func Name(path string) string {
	if path == "-" {
		return StdinName
	}
	return path
}

// open returns a reader of path bounded by limit and ctx, and the file's size when it is a
// regular file (0 otherwise).
func open(ctx context.Context, path string, stdin io.Reader, limit int64) (*reader, int64, error) {
	name := Name(path)
	if err := ctx.Err(); err != nil {
		return nil, 0, stopped(ctx, name)
	}
	var (
		src  io.Reader
		file *os.File
		size int64
	)
	if path == "-" {
		if stdin == nil {
			return nil, 0, errors.New("standard input is not available")
		}
		src = stdin
	} else {
		f, err := openFile(ctx, path)
		if err != nil {
			return nil, 0, err
		}
		if info, err := f.Stat(); err == nil && info.Mode().IsRegular() {
			if info.Size() > limit {
				f.Close()
				return nil, 0, &TooLargeError{Name: name, Limit: limit}
			}
			size = info.Size()
		}
		src, file = f, f
	}
	pr, pw := io.Pipe()
	r := &reader{pr: pr, file: file}
	go r.pump(src, pw, name, limit)
	r.stop = context.AfterFunc(ctx, func() {
		pw.CloseWithError(stopped(ctx, name)) // the next Read returns it
		r.closeFile()
	})
	return r, size, nil
}

// openFile opens path, returning when ctx is done even if open(2) blocks (a FIFO waits for a
// writer).
func openFile(ctx context.Context, path string) (*os.File, error) {
	type opened struct {
		f   *os.File
		err error
	}
	done := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		done <- opened{f, err}
	}()
	select {
	case o := <-done:
		return o.f, o.err
	case <-ctx.Done():
		go func() {
			if o := <-done; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, stopped(ctx, Name(path))
	}
}

// stopped is the error of a read ended by ctx: it wraps ctx.Err() and, when the context was
// cancelled with a cause (a signal), the cause.
func stopped(ctx context.Context, name string) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause != nil && !errors.Is(cause, err) {
		return fmt.Errorf("reading %s stopped: %w: %w", name, cause, err)
	}
	return fmt.Errorf("reading %s stopped: %w", name, err)
}

// reader is the consumer end of a pipe fed by pump, so that a Read waits on the pipe (which
// ctx can close) rather than on the operating system.
type reader struct {
	pr        *io.PipeReader
	file      *os.File
	stop      func() bool
	closeOnce sync.Once
}

func (r *reader) Read(p []byte) (int, error) { return r.pr.Read(p) }

func (r *reader) Close() error {
	r.stop()
	r.pr.Close()
	r.closeFile()
	return nil
}

// closeFile closes the file (once), which also ends a Read blocked on a pollable descriptor.
func (r *reader) closeFile() {
	if r.file != nil {
		r.closeOnce.Do(func() { go r.file.Close() })
	}
}

// pump copies src into the pipe, failing with a *TooLargeError past limit. It reads at most
// limit+1 bytes.
func (r *reader) pump(src io.Reader, pw *io.PipeWriter, name string, limit int64) {
	defer r.closeFile()
	buf := make([]byte, 64<<10)
	var n int64
	for {
		chunk := buf
		if left := limit - n + 1; left < int64(len(chunk)) {
			chunk = chunk[:left]
		}
		k, err := src.Read(chunk)
		n += int64(k)
		if n > limit {
			pw.CloseWithError(&TooLargeError{Name: name, Limit: limit})
			return
		}
		if k > 0 {
			if _, werr := pw.Write(chunk[:k]); werr != nil {
				return // the reader is closed
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			pw.Close()
			return
		case err != nil:
			if pe := (*fs.PathError)(nil); !errors.As(err, &pe) {
				err = fmt.Errorf("reading %s: %w", name, err)
			}
			pw.CloseWithError(err)
			return
		}
	}
}
