package policy

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Defaults of Options.
const (
	DefaultTimeout      = time.Second
	DefaultPollInterval = 10 * time.Second
)

// Options configure an Engine.
type Options struct {
	// Dirs are policy directories (a --policy flag, a mounted ConfigMap): their .rego modules
	// (except *_test.rego) and JSON/YAML data documents, read recursively; entries whose
	// name starts with "." are skipped.
	Dirs []string
	// Disable names policies to turn off: a package without its driverguard. prefix (e.g.
	// lib.max_parallel_upgrades) or in full. data.driverguard_config.disabled adds more.
	Disable []string
	// Enforcement overrides the enforcement of policies, by name as Disable takes them
	// (see [Enforcement]).
	Enforcement map[string]Enforcement
	// ExcludeLibrary leaves the bundled library's rules out (only Dirs' are evaluated); its
	// helper packages (driverguard.lib.util, any library package without deny or warn
	// rules), which policies import, stay loaded.
	ExcludeLibrary bool
	// Timeout bounds one evaluation (DefaultTimeout when zero); the caller's context may end
	// it sooner.
	Timeout time.Duration
	// PollInterval is how often Start re-reads Dirs besides reacting to file system events
	// (DefaultPollInterval when zero).
	PollInterval time.Duration
	// MaxFileBytes bounds one policy or data file of Dirs (DefaultMaxFileBytes when zero): a
	// larger file is a load problem naming it, not a read of whatever it holds.
	MaxFileBytes int64
	// Logger receives load and reload reports (none when unset).
	Logger logr.Logger
	// Metrics registers the engine's collectors; nil means controller-runtime's registry
	// (what `driverguard serve` exposes on /metrics).
	Metrics prometheus.Registerer
	// MaxConcurrent bounds the evaluations running at once (twice GOMAXPROCS when zero):
	// more wait for a slot within their deadline. Each evaluation holds its input and
	// intermediate values; past the CPUs, more at once only add memory and latency.
	MaxConcurrent int
}

// Engine evaluates the bundled library and the user's policies. It compiles every module once
// into a prepared query (at New and on each reload) and evaluates it per object; it is safe
// for concurrent use. A reload that fails keeps the previous policy set active and is
// reported by Status, the log and the driverguard_policy_load_failed metric.
type Engine struct {
	opts    Options
	log     logr.Logger
	metrics *engineMetrics
	lib     map[string]*ast.Module

	active atomic.Pointer[policySet]
	// families are the lowercase families of the cluster view, for the object guards: while
	// the store is written, those before and after the write (a superset is always safe).
	families atomic.Pointer[map[string]bool]
	slots    chan struct{} // one per evaluation running

	// mu serializes loads and cluster writes, and guards what follows.
	mu sync.Mutex
	// cluster is the cluster view every set's store holds at data.driverguard_cluster.
	cluster *clusterData
	// attempted is the fingerprint of the files of the latest load attempt.
	attempted [sha256.Size]byte
	status    Status
}

var _ Evaluator = (*Engine)(nil)

// New loads the bundled library and the policy directories. It fails, with a *LoadError
// naming every problem's file and line, when the policies do not compile: there is no
// previous set to fall back on.
func New(ctx context.Context, opts Options) (*Engine, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	reg := opts.Metrics
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 2 * runtime.GOMAXPROCS(0)
	}
	e := &Engine{opts: opts, log: opts.Logger, metrics: newEngineMetrics(reg), lib: map[string]*ast.Module{}, cluster: newClusterData(),
		slots: make(chan struct{}, opts.MaxConcurrent)}
	e.families.Store(&map[string]bool{})
	if e.log.GetSink() == nil {
		e.log = logr.Discard()
	}
	lib, err := library()
	if err != nil {
		return nil, fmt.Errorf("policy: the bundled library does not parse: %w", err)
	}
	e.lib = lib.policies
	if opts.ExcludeLibrary {
		e.lib = helperModules(lib.policies)
	}
	e.status.Dirs = slices.Clone(opts.Dirs)
	if err := e.load(ctx, true); err != nil {
		return nil, err
	}
	return e, nil
}

// NodeLabelKeys are the node label keys the active policies declare they read in
// data.driverguard_cluster.nodes (METADATA custom.nodeLabels), sorted; read them only.
func (e *Engine) NodeLabelKeys() []string {
	if set := e.active.Load(); set != nil {
		return set.nodeLabels
	}
	return nil
}

// Reload re-reads the policy directories and activates the new set. On failure the previous
// set stays active and the returned *LoadError is also reported by Status.
func (e *Engine) Reload(ctx context.Context) error {
	return e.load(ctx, true)
}

// reloadIfChanged reloads when the directories' content differs from the latest attempt.
func (e *Engine) reloadIfChanged(ctx context.Context) error {
	return e.load(ctx, false)
}

func (e *Engine) load(ctx context.Context, force bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	files, err := readDirs(e.opts.Dirs, false, e.opts.MaxFileBytes)
	// The fingerprint of what was read, or of why nothing could be: an unchanged state is
	// neither recompiled nor reported again.
	fp := fingerprint(files)
	if err != nil {
		fp = sha256.Sum256([]byte("unreadable\x00" + err.Error()))
	}
	if !force && fp == e.attempted {
		if e.status.Error != nil {
			return e.status.Error
		}
		return nil
	}
	e.attempted = fp
	if err == nil {
		err = e.compile(ctx, files)
	}
	if err != nil {
		e.metrics.loads.WithLabelValues("failure").Inc()
		e.metrics.loadFailed.Set(1)
		var le *LoadError
		if !errors.As(err, &le) {
			le = newLoadError(Problem{Message: err.Error()})
		}
		e.status.Error = le
		e.status.FailedAt = time.Now()
		if e.active.Load() != nil {
			e.log.Error(le, "policy reload failed; the previous policies stay active", "generation", e.status.Generation)
		}
		return le
	}
	set := e.active.Load()
	e.metrics.loads.WithLabelValues("success").Inc()
	e.metrics.loadFailed.Set(0)
	e.status.Error = nil
	e.status.FailedAt = time.Time{}
	e.status.Generation++
	e.status.LoadedAt = time.Now()
	e.status.Policies = set.policies
	e.status.Disabled = set.disabled
	e.status.Files = set.files
	e.log.Info("policies loaded", "generation", e.status.Generation, "policies", len(set.policies), "files", set.files, "disabled", set.disabled)
	return nil
}

func (e *Engine) compile(ctx context.Context, files []sourceFile) error {
	user, problems := parseFiles(files)
	if len(problems) > 0 {
		return newLoadError(problems...)
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.path
	}
	set, err := compileSet(ctx, e.lib, user, e.opts.Disable, e.opts.Enforcement, names, func(withNodes bool, nodeLabels []string) ast.Object {
		e.cluster.setDeclared(nodeLabels)
		return e.cluster.document(withNodes)
	})
	if err != nil {
		return err
	}
	e.cluster.holdNodes(set.readsNodes)
	e.active.Store(set)
	return nil
}

// Evaluate runs every enabled policy on one input within the engine's deadline, with the
// cluster view (data.driverguard_cluster) as the last SyncCluster or PatchCluster left it.
// The error is non-nil when the policies could not be evaluated (a conflict in a rule, the
// deadline, a cancelled context); errors.Is(err, context.DeadlineExceeded) tells a timeout.
// What an error means is the caller's choice: `check` fails (exit 2), the webhook refuses the
// request unless it is configured fail-open.
func (e *Engine) Evaluate(ctx context.Context, in *Input) (*Decision, error) {
	start := time.Now()
	d, err := e.evaluate(ctx, in)
	e.metrics.duration.Observe(time.Since(start).Seconds())
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		e.metrics.evaluations.WithLabelValues("timeout").Inc()
	case err != nil:
		e.metrics.evaluations.WithLabelValues("error").Inc()
	case len(d.Deny) > 0:
		e.metrics.evaluations.WithLabelValues("denied").Inc()
	case len(d.Warn) > 0:
		e.metrics.evaluations.WithLabelValues("warned").Inc()
	default:
		e.metrics.evaluations.WithLabelValues("allowed").Inc()
	}
	return d, err
}

func (e *Engine) evaluate(ctx context.Context, in *Input) (*Decision, error) {
	if in == nil {
		return nil, errors.New("policy: no input")
	}
	set := e.active.Load()
	value, err := inputValue(in, set.routingOf(in), set.inputReads)
	if err != nil {
		return nil, err
	}
	q := set.query
	kind := objectKind(value)
	if kq, ok := set.byKind[kind]; ok {
		q = kq // the policies that can apply to this kind only
	}
	if kind == driverKind {
		if mask := e.skipMask(set, value); mask != 0 {
			q = set.skips[mask] // less the guarded policies that cannot fire on it
		}
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	select {
	case e.slots <- struct{}{}:
		defer func() { <-e.slots }()
	case <-ctx.Done():
		return nil, fmt.Errorf("policy: no evaluation slot within %s (%d evaluations running): %w", e.opts.Timeout, cap(e.slots), ctx.Err())
	}
	// OPA starts a goroutine per evaluation to watch the context unless the caller cancels;
	// context.AfterFunc does the same without one (a tenth of a request's CPU at admission).
	cancelEval := topdown.NewCancel()
	stop := context.AfterFunc(ctx, cancelEval.Cancel)
	// Without metrics of its own, each evaluation would allocate a set of timers no one reads.
	rs, err := q.query.Eval(ctx, rego.EvalParsedInput(value), rego.EvalExternalCancel(cancelEval), rego.EvalMetrics(metrics.NoOp()))
	stop()
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			if errors.Is(ctxErr, context.DeadlineExceeded) {
				return nil, fmt.Errorf("policy: evaluation did not finish within %s: %w", e.opts.Timeout, errors.Join(ctxErr, err))
			}
			return nil, fmt.Errorf("policy: evaluation cancelled: %w", errors.Join(ctxErr, err))
		}
		return nil, fmt.Errorf("policy: evaluation failed: %w", err)
	}
	return decisionOf(rs, q.packages, q.modes)
}

// objectKind is input.object.kind of an input value ("" when it has none).
func objectKind(input ast.Value) string {
	in, _ := input.(ast.Object)
	if in == nil {
		return ""
	}
	kind, _ := stringAt(in, "object", "kind")
	return kind
}

// ReadsRouting reports whether the active policies read input.routing (implements
// RoutingReader): with the library on they do; the three checks of a team policy may not.
func (e *Engine) ReadsRouting() bool { return e.active.Load().readsRouting }

var _ RoutingReader = (*Engine)(nil)

// Timeout is the deadline of one evaluation.
func (e *Engine) Timeout() time.Duration { return e.opts.Timeout }

// decisionOf reads the decision, a set of [<package of pkgs>, "deny"|"warn", message]. The
// messages are sorted by package, then message.
func decisionOf(rs rego.ResultSet, pkgs []string, modes []map[string]Enforcement) (*Decision, error) {
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return nil, fmt.Errorf("policy: the decision query returned %d results", len(rs))
	}
	entries, ok := rs[0].Expressions[0].Value.([]any)
	if !ok {
		return nil, fmt.Errorf("policy: the decision is a %T, not a set", rs[0].Expressions[0].Value)
	}
	type bucket struct{ deny, warn []any }
	buckets := make([]bucket, len(pkgs))
	for _, e := range entries {
		entry, _ := e.([]any)
		if len(entry) != 3 {
			return nil, fmt.Errorf("policy: decision entry %v is not [policy, rule, message]", e)
		}
		pkg, _ := entry[0].(string)
		i := slices.Index(pkgs, pkg)
		if i < 0 {
			return nil, fmt.Errorf("policy: decision entry %v names no policy of the decision", e)
		}
		switch entry[1] {
		case "deny":
			buckets[i].deny = append(buckets[i].deny, entry[2])
		case "warn":
			buckets[i].warn = append(buckets[i].warn, entry[2])
		default:
			return nil, fmt.Errorf("policy: decision entry %v is neither deny nor warn", e)
		}
	}
	d := &Decision{Deny: []Message{}, Warn: []Message{}}
	var msgs []Message
	for i, b := range buckets {
		msgs = appendMessages(msgs[:0], b.deny, pkgs[i], "deny")
		msgs = appendMessages(msgs, b.warn, pkgs[i], "warn")
		for _, m := range msgs {
			d.route(m, modes[i][m.Rule])
		}
	}
	return d, nil
}

// appendMessages adds one policy's message set, sorted (the sets come in package order). A
// message is a string, or an object whose msg is one (conftest's form); anything else is
// shown as JSON.
func appendMessages(out []Message, items []any, pkg, rule string) []Message {
	start := len(out)
	for _, it := range items {
		out = append(out, Message{Package: pkg, Rule: rule, Msg: messageText(it)})
	}
	slices.SortFunc(out[start:], func(a, b Message) int { return cmp.Compare(a.Msg, b.Msg) })
	return out
}

func messageText(v any) string {
	switch m := v.(type) {
	case string:
		return m
	case map[string]any:
		if s, ok := m["msg"].(string); ok {
			return s
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
