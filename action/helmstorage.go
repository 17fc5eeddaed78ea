package action

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/driverguard/driverguard/api/decode"
)

// DefaultMaxReleaseBytes bounds one revision of a Helm release as plan --release reads it,
// decompressed: Helm stores a revision as gzipped JSON that holds the whole chart and the
// values (a release of this chart is about 160 KiB; its CRDs are the bulk). A release Secret holds
// at most about 1 MiB, which gzip can inflate a thousandfold: the limit is what stops a
// compressed "bomb", long before it costs memory.
const DefaultMaxReleaseBytes int64 = 32 << 20

// FlagMaxReleaseSize raises DefaultMaxReleaseBytes.
const FlagMaxReleaseSize = "max-release-size"

// Helm's release storage (helm.sh/helm pkg/storage/driver, the same in Helm 3 and Helm 4):
// one Secret (HELM_DRIVER secret, the default) or ConfigMap (configmap) per revision, named
// sh.helm.release.v1.NAME.vREVISION, labelled owner=helm, name=NAME, version=REVISION and
// status, whose data key "release" is the revision's JSON, gzipped, base64-encoded.
const (
	helmStorageKey   = "release"
	helmLabelOwner   = "owner"
	helmLabelName    = "name"
	helmLabelVersion = "version"
)

// storedRelease is what plan reads of one revision's JSON; the rest (the chart's templates
// and files, the manifest, hooks) is skipped, never held.
type storedRelease struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Version   int    `json:"version"`
	Info      *struct {
		Status string `json:"status"`
	} `json:"info"`
	Chart *struct {
		Metadata *struct {
			Name string `json:"name"`
		} `json:"metadata"`
	} `json:"chart"`
	Config map[string]any `json:"config"`
}

// releaseStorage reads release revisions from one of Helm's storage drivers.
type releaseStorage struct {
	// kind is "Secret" or "ConfigMap"; resource its API resource.
	kind, resource string
	meta           metadata.Interface
	core           kubernetes.Interface
	ns             string
	// limit bounds a revision decompressed.
	limit int64
}

// newReleaseStorage returns the storage of Helm's driver (HELM_DRIVER: secret, configmap;
// "" is secret) in namespace ns. Helm's sql driver (and memory, which holds nothing between
// runs) is refused: its rows are not read through a limit here.
func newReleaseStorage(cfg *rest.Config, driver, ns string, limit int64) (*releaseStorage, error) {
	s := &releaseStorage{ns: ns, limit: limit}
	switch driver {
	case "", "secret", "secrets":
		s.kind, s.resource = "Secret", "secrets"
	case "configmap", "configmaps":
		s.kind, s.resource = "ConfigMap", "configmaps"
	case "sql":
		return nil, errors.New("HELM_DRIVER=sql: plan --release reads releases stored in Secrets (HELM_DRIVER secret, Helm's default) or ConfigMaps (configmap); " +
			"for SQL storage give the release's values instead: `helm get values NAME -n NS -o yaml > deployed.yaml`, " +
			"`driverguard render -f deployed.yaml --release-name NAME > current.yaml`, then plan with --drivers current.yaml --cluster-policy current.yaml")
	case "memory":
		return nil, errors.New("HELM_DRIVER=memory holds no release between runs: unset HELM_DRIVER (or set it to secret or configmap, where the release is stored)")
	default:
		return nil, fmt.Errorf("HELM_DRIVER=%q is not one of Helm's storage drivers: use secret (the default) or configmap", truncateValue(driver))
	}
	var err error
	if s.meta, err = metadata.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if s.core, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// revision is one stored revision, as listed.
type revision struct {
	object  string // the Secret's or ConfigMap's name
	version int
}

// latest returns the latest revision of the release name, as Helm's `get` finds it (the
// highest version among the objects labelled owner=helm, name=NAME). Only the objects'
// metadata is listed: a release with a long history costs nothing more to read.
func (s *releaseStorage) latest(ctx context.Context, name string) (*revision, error) {
	sel := labels.Set{helmLabelOwner: "helm", helmLabelName: name}.AsSelector().String()
	res := s.meta.Resource(corev1.SchemeGroupVersion.WithResource(s.resource)).Namespace(s.ns)
	var latest *revision
	opts := metav1.ListOptions{LabelSelector: sel, Limit: 500}
	for {
		list, err := res.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the %ss of release %s: %w", s.kind, name, err)
		}
		for _, item := range list.Items {
			v, err := strconv.Atoi(item.Labels[helmLabelVersion])
			if err != nil || v < 1 {
				return nil, fmt.Errorf("%s %s is labelled as a revision of release %s, but its %s label %q is not a revision number",
					s.kind, item.Name, name, helmLabelVersion, truncateValue(item.Labels[helmLabelVersion]))
			}
			if latest == nil || v > latest.version {
				latest = &revision{object: item.Name, version: v}
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	if latest == nil {
		return nil, fmt.Errorf("release: not found (no %s labelled owner=helm,name=%s)", s.kind, name)
	}
	return latest, nil
}

// read reads and decodes one revision through the limit.
func (s *releaseStorage) read(ctx context.Context, name string, rev *revision) (*storedRelease, error) {
	var data []byte
	switch s.kind {
	case "Secret":
		obj, err := s.core.CoreV1().Secrets(s.ns).Get(ctx, rev.object, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading Secret %s: %w", rev.object, err)
		}
		data = obj.Data[helmStorageKey]
	default:
		obj, err := s.core.CoreV1().ConfigMaps(s.ns).Get(ctx, rev.object, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading ConfigMap %s: %w", rev.object, err)
		}
		data = []byte(obj.Data[helmStorageKey])
	}
	rel, err := decodeRelease(ctx, data, s.limit)
	var tl *decode.TooLargeError
	switch {
	case errors.As(err, &tl):
		return nil, &ReleaseTooLargeError{Release: name, Namespace: s.ns, Revision: rev.version, Object: s.kind + " " + rev.object, Err: tl}
	case err != nil:
		return nil, fmt.Errorf("%s %s (revision %d of release %s) does not hold a Helm release: %w", s.kind, rev.object, rev.version, name, err)
	}
	if rel.Name != name || rel.Version != rev.version {
		return nil, fmt.Errorf("%s %s is labelled as revision %d of release %s but holds revision %d of release %q: not Helm's record of this release",
			s.kind, rev.object, rev.version, name, rel.Version, truncateValue(rel.Name))
	}
	return rel, nil
}

// ReleaseTooLargeError is a release revision larger, decompressed, than --max-release-size.
type ReleaseTooLargeError struct {
	Release, Namespace string
	Revision           int
	// Object is the Secret or ConfigMap that holds it ("Secret sh.helm.release.v1.x.v1").
	Object string
	Err    *decode.TooLargeError
}

func (e *ReleaseTooLargeError) Error() string {
	return fmt.Sprintf("release %s in namespace %s: revision %d (%s) is larger than %s once decompressed, the limit of --%s; "+
		"a driverguard release is about 160 KiB, so this one is not what Helm stores for this chart (a compressed bomb?): "+
		"if it is genuine, raise the limit with --%s", e.Release, e.Namespace, e.Revision, e.Object, decode.FormatBytes(e.Err.Limit),
		FlagMaxReleaseSize, FlagMaxReleaseSize)
}

func (e *ReleaseTooLargeError) Unwrap() error { return e.Err }

// gzipMagic starts gzipped data; Helm stores revisions uncompressed when it is absent (before
// Helm 2.x compressed them), and so reads them.
var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// decodeRelease decodes a revision as Helm stores it (base64 of gzipped JSON, or of JSON),
// reading at most limit bytes of JSON: a larger one is a *decode.TooLargeError, found after
// limit bytes were inflated, never more. The JSON is measured first, into nothing, so that
// a revision over the limit costs no memory, and one within it is read into a buffer of its
// size.
func decodeRelease(ctx context.Context, data []byte, limit int64) (*storedRelease, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("its %q key is empty", helmStorageKey)
	}
	open := func(limit int64) (*limitedReader, func(), error) {
		br := bufio.NewReader(base64.NewDecoder(base64.StdEncoding, bytes.NewReader(data)))
		var r io.Reader = br
		done := func() {}
		if magic, _ := br.Peek(len(gzipMagic)); bytes.Equal(magic, gzipMagic) {
			gz, err := gzip.NewReader(br)
			if err != nil {
				return nil, nil, fmt.Errorf("decompressing: %w", err)
			}
			r, done = gz, func() { gz.Close() }
		}
		return &limitedReader{ctx: ctx, r: r, left: limit}, done, nil
	}
	lr, done, err := open(limit)
	if err != nil {
		return nil, err
	}
	size, err := io.Copy(io.Discard, lr)
	done()
	if err != nil {
		return nil, err
	}
	if lr.over {
		return nil, &decode.TooLargeError{Name: "the release", Limit: limit}
	}
	if lr, done, err = open(size); err != nil {
		return nil, err
	}
	defer done()
	raw := make([]byte, size)
	if _, err := io.ReadFull(lr, raw); err != nil {
		return nil, err
	}
	var rel storedRelease
	if err := json.Unmarshal(raw, &rel); err != nil {
		return nil, fmt.Errorf("decoding its JSON: %w", err)
	}
	return &rel, nil
}

// limitedReader reads at most left bytes of r, then reports over (one byte more was there);
// it stops when ctx is done.
type limitedReader struct {
	ctx  context.Context
	r    io.Reader
	left int64
	over bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if err := l.ctx.Err(); err != nil {
		return 0, err
	}
	if l.left <= 0 {
		var one [1]byte
		if n, _ := io.ReadFull(l.r, one[:]); n > 0 {
			l.over = true
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
