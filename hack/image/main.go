// Command image builds the driverguard container image without a container daemon and pushes
// it (`make image`, `make image-push`).
//
//	go run ./hack/image build [-out bin/image] [-platforms linux/amd64,linux/arm64] [-version V] [-repository R] [-working-tree]
//	go run ./hack/image push [-layout bin/image/oci] [-name REF] <registry>/<repository>:<tag>
//
// build compiles a clean checkout of the HEAD commit (-working-tree: the files as they are) and
// writes an OCI image layout to <out>/oci (index.json names the index
// driverguard/driverguard:<chart appVersion>, the chart's default image) and an SPDX SBOM per
// platform to <out>/sbom/<os>-<arch>.spdx.json. SOURCE_DATE_EPOCH, when set, replaces the
// commit time as the image's timestamp. push uploads the layout's index with the credentials
// of the default keychain (docker config, credential helpers).
//
// Exit codes: 0 ok, 1 failure, 2 wrong usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/driverguard/driverguard/hack/image/imagebuild"
)

// usageError is wrong usage: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var usage usageError
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.As(err, &usage):
		fmt.Fprintf(os.Stderr, "image: %v\n%s", err, usageText)
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

const usageText = `usage:
  go run ./hack/image build [-out DIR] [-platforms LIST] [-version V] [-repository R] [-working-tree] [-timeout D]
  go run ./hack/image push [-layout DIR] [-name REF] [-timeout D] <registry>/<repository>:<tag>
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"no command"}
	}
	switch args[0] {
	case "build":
		return build(ctx, args[1:], stdout, stderr)
	case "push":
		return push(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usageText)
		return nil
	default:
		return usageError{fmt.Sprintf("unknown command %q", args[0])}
	}
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parse parses the flags; a bad flag is wrong usage (the flag package has printed why).
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	return nil
}

func build(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("build", stderr)
	out := fs.String("out", "bin/image", "output directory: <out>/oci (the image layout) and <out>/sbom")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated platforms of the index")
	version := fs.String("version", "", "image version and tag (default: the chart's appVersion)")
	repository := fs.String("repository", imagebuild.DefaultRepository, "repository of the reference the layout records")
	workingTree := fs.Bool("working-tree", false, "build the files as they are, uncommitted changes included (default: the HEAD commit)")
	timeout := fs.Duration("timeout", 30*time.Minute, "deadline of the whole build")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError{fmt.Sprintf("build takes no arguments, got %q", fs.Args())}
	}
	o := imagebuild.Options{Version: *version, Repository: *repository, WorkingTree: *workingTree}
	for _, s := range strings.Split(*platforms, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(s))
		if err != nil {
			return usageError{fmt.Sprintf("-platforms: %v", err)}
		}
		o.Platforms = append(o.Platforms, *p)
	}
	if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		sec, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return usageError{fmt.Sprintf("SOURCE_DATE_EPOCH=%q: want seconds since the Unix epoch", epoch)}
		}
		o.Created = time.Unix(sec, 0)
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	r, err := imagebuild.Build(ctx, o)
	if err != nil {
		return err
	}
	if r.Modified {
		fmt.Fprintf(stderr, "image: warning: built from a tree with uncommitted changes; revision %s does not reproduce this image\n", r.Revision)
	}
	if r.LeftOut {
		fmt.Fprintf(stderr, "image: note: built commit %s; uncommitted changes and untracked files are not in the image (-working-tree includes them)\n", r.Revision)
	}
	layoutDir := filepath.Join(*out, "oci")
	if err := imagebuild.WriteLayout(layoutDir, r); err != nil {
		return err
	}
	sbomDir := filepath.Join(*out, "sbom")
	if err := os.MkdirAll(sbomDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", sbomDir, err)
	}
	digest, err := r.Index.Digest()
	if err != nil {
		return fmt.Errorf("computing the index digest: %w", err)
	}
	fmt.Fprintf(stdout, "%s  %s\n  revision %s, created %s\n", r.RefName, digest, dash(r.Revision), r.Created.Format(time.RFC3339))
	var files []string
	for _, pi := range r.Images {
		d, err := pi.Image.Digest()
		if err != nil {
			return fmt.Errorf("computing the %s image digest: %w", pi.Platform.String(), err)
		}
		size, err := imagebuild.Size(pi.Image)
		if err != nil {
			return fmt.Errorf("the %s image: %w", pi.Platform.String(), err)
		}
		fmt.Fprintf(stdout, "  %-12s %s  %.1f MB\n", pi.Platform.String(), d, float64(size)/1e6)
		file := filepath.Join(sbomDir, pi.Platform.OS+"-"+pi.Platform.Architecture+".spdx.json")
		if err := os.WriteFile(file, pi.SBOM, 0o644); err != nil {
			return fmt.Errorf("writing the SBOM: %w", err)
		}
		files = append(files, file)
	}
	fmt.Fprintf(stdout, "wrote %s, %s\n", layoutDir, strings.Join(files, ", "))
	return nil
}

func push(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("push", stderr)
	layoutDir := fs.String("layout", "bin/image/oci", "the OCI image layout `make image` wrote")
	refName := fs.String("name", "", "the index to push, by its name in the layout (default: the only one)")
	timeout := fs.Duration("timeout", 10*time.Minute, "deadline of the upload")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"push takes one argument: <registry>/<repository>:<tag>"}
	}
	if _, err := name.NewTag(fs.Arg(0), name.StrictValidation); err != nil {
		return usageError{fmt.Sprintf("%q: want <registry>/<repository>:<tag>: %v", fs.Arg(0), err)}
	}
	idx, err := imagebuild.LoadLayout(*layoutDir, *refName)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	d, err := imagebuild.Push(ctx, idx, fs.Arg(0), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pushed %s\n", d)
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
