package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/release"
)

func newPolicyCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Author policies: run their Rego tests, print their input documents, list them",
		Long: `Policies are Rego v1 packages under driverguard. with deny and warn rules (sets of message
strings). 'check' evaluates them at render time and the admission webhook at admission time, on
the same input document. See docs/policy-authoring.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError(errors.New("name a subcommand: test, input, data or list"))
		},
	}
	cmd.AddCommand(newPolicyTestCommand(s), newPolicyInputCommand(s), newPolicyDataCommand(s), newPolicyListCommand(s))
	return cmd
}

type policyTestOptions struct {
	run     string
	verbose bool
	timeout time.Duration
	output  outputFlag
}

func newPolicyTestCommand(s Streams) *cobra.Command {
	o := &policyTestOptions{output: newOutput(formatTable, formatTable, formatJSON, formatYAML)}
	cmd := &cobra.Command{
		Use:   "test [DIR...]",
		Short: "Run the Rego unit tests of policy directories together with the bundled library's",
		Long: `test runs every test_* rule of the directories' modules (usually in *_test.rego files) with
OPA's test runner, compiled together with the bundled library, its tests and its fixtures
(data.driverguard.lib.fixtures), and the directories' data documents — as 'opa test' would, no
opa binary needed. Your tests are listed one per line; the library's only when they fail (all
with -v).

Exit codes: 0 every test passed; 1 a test failed or errored; 2 a module does not parse or compile.`,
		Example: `  driverguard policy test policies/
  driverguard policy test policies/ --run 'test_deny_' -v`,
		RunE: func(cmd *cobra.Command, dirs []string) error {
			results, err := policy.RunTests(cmd.Context(), policy.TestOptions{Dirs: dirs, Run: o.run, Timeout: o.timeout, MaxFileBytes: int64(limitsOf(s).values)})
			if err != nil {
				return loadError(err)
			}
			var yours int
			for _, r := range results {
				if !r.Bundled {
					yours++
				}
			}
			if len(dirs) > 0 && yours == 0 {
				fmt.Fprintf(s.Err, "Warning: no tests (test_* rules) in %s\n", strings.Join(dirs, ", "))
			}
			failed := 0
			for _, r := range results {
				if r.Outcome == policy.TestFail || r.Outcome == policy.TestError {
					failed++
				}
			}
			report := struct {
				Tests  []policy.TestResult `json:"tests"`
				Failed int                 `json:"failed"`
			}{nonNilTests(results), failed}
			if err := o.output.print(s.Out, report, func(w io.Writer) error { printTests(w, results, o.verbose); return nil }); err != nil {
				return err
			}
			if failed > 0 {
				return invalidError(errSilent)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.run, "run", "", "run only the tests whose package.name matches this regular expression")
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "list the bundled library's tests too")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 5*time.Second, "deadline of one test")
	o.output.register(cmd.Flags())
	return cmd
}

func nonNilTests(r []policy.TestResult) []policy.TestResult {
	if r == nil {
		return []policy.TestResult{}
	}
	return r
}

// printTests lists the user's tests (and failing or, verbose, all bundled ones) and a summary.
func printTests(w io.Writer, results []policy.TestResult, verbose bool) {
	type tally struct{ passed, total int }
	var yours, bundled tally
	for _, r := range results {
		t := &yours
		if r.Bundled {
			t = &bundled
		}
		t.total++
		if r.Outcome == policy.TestPass {
			t.passed++
		}
		if r.Bundled && r.Outcome == policy.TestPass && !verbose {
			continue
		}
		fmt.Fprintf(w, "%-5s %s.%s (%s:%d)\n", r.Outcome, r.Package, r.Name, r.File, r.Line)
		if r.Error != "" {
			fmt.Fprintf(w, "      %s\n", r.Error)
		}
		if r.Outcome != policy.TestPass && r.Output != "" {
			for _, line := range strings.Split(strings.TrimRight(r.Output, "\n"), "\n") {
				fmt.Fprintf(w, "      %s\n", line)
			}
		}
	}
	fmt.Fprintf(w, "%d/%d passed; bundled library: %d/%d passed\n", yours.passed, yours.total, bundled.passed, bundled.total)
}

type policyInputOptions struct {
	judgeFlags
	name   string
	output outputFlag
}

func newPolicyInputCommand(s Streams) *cobra.Command {
	o := &policyInputOptions{output: newOutput(formatJSON, formatJSON, formatYAML, formatTable)}
	cmd := &cobra.Command{
		Use:   "input -f values.yaml [--nodes nodes.yaml] [--drivers current.yaml] [--name NAME] [-o json|yaml|table]",
		Short: "Print the exact input documents check evaluates",
		Long: `input judges the values exactly like 'check' and prints the input document of every object as the
policies saw it: a JSON array in Helm's order (the RBLNClusterPolicy, then each RBLNDriver),
written as it is evaluated. --name prints the one document of that object, ready for 'opa eval
--input' or a test's 'with input as'; 'driverguard policy data' prints the cluster view
(data.driverguard_cluster) it was evaluated against. The admission webhook builds the same shape
(source admission, plus userInfo); docs/policy-input.schema.json is its schema.`,
		Example: `  driverguard policy input -f examples/multi-driver.yaml --nodes examples/nodes.yaml
  driverguard policy input -f values.yaml --name rbln-driver-atom-canary > input.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), s)
		},
	}
	o.judgeFlags.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.name, "name", "", "print only the input document of the object with this name")
	o.output.register(cmd.Flags())
	return cmd
}

// errFound ends a replay once the one object asked for was seen.
var errFound = errors.New("found")

func (o *policyInputOptions) run(ctx context.Context, s Streams) error {
	engine, err := o.policy.engine(ctx, s)
	if err != nil {
		return err
	}
	out := newDocumentStream(s.Out, o.output.format, o.name == "")
	var names []string
	rec := &recordingEvaluator{Evaluator: engine, record: func(in *policy.Input) error {
		name := inputName(in)
		names = append(names, name)
		if o.name != "" && name != o.name {
			return nil
		}
		if err := out.write(in); err != nil {
			return err
		}
		if o.name != "" {
			return errFound
		}
		return nil
	}}
	if err := oneStdin(append(o.valuesFlags.stdinUsers(), o.cluster.stdinUsers()...)...); err != nil {
		return err
	}
	r, err := o.render(ctx, s)
	if err != nil {
		return err
	}
	printWarnings(s.Err, r.Warnings)
	cl, err := o.cluster.read(ctx, s)
	if err != nil {
		return err
	}
	_, err = o.judgeWith(ctx, r, cl, engine, release.Options{Decider: &decision.Decider{Policy: rec, PolicyFailOpen: o.failOpen}})
	switch {
	case errors.Is(err, errFound):
		return nil
	case err != nil:
		return err
	case o.name != "":
		return usageError(fmt.Errorf("no rendered object is named %q; the objects are %s", truncateValue(o.name), capList(names)))
	}
	return out.close()
}

// recordingEvaluator hands every input to record before evaluating it.
type recordingEvaluator struct {
	policy.Evaluator
	record func(*policy.Input) error
}

func (r *recordingEvaluator) Evaluate(ctx context.Context, in *policy.Input) (*policy.Decision, error) {
	if err := r.record(in); err != nil {
		return nil, err
	}
	return r.Evaluator.Evaluate(ctx, in)
}

// inputName is the name of an input's object.
func inputName(in *policy.Input) string {
	switch o := in.Object.(type) {
	case *v1alpha1.RBLNDriver:
		return o.Name
	case *v1alpha1.RBLNClusterPolicy:
		return o.Name
	}
	return ""
}

// documentStream writes documents one at a time: a JSON array (or one JSON document), a YAML
// stream, or a table line per input document.
type documentStream struct {
	w      io.Writer
	format string
	array  bool
	n      int
	tw     *tabwriter.Writer
}

func newDocumentStream(w io.Writer, format string, array bool) *documentStream {
	return &documentStream{w: w, format: format, array: array}
}

func (d *documentStream) write(in *policy.Input) error {
	defer func() { d.n++ }()
	switch d.format {
	case formatYAML:
		if d.n > 0 {
			if _, err := io.WriteString(d.w, "---\n"); err != nil {
				return err
			}
		}
		return writeYAML(d.w, in)
	case formatTable:
		if d.tw == nil {
			d.tw = newTable(d.w)
			fmt.Fprintln(d.tw, "OBJECT\tOPERATION\tSELECTED\tNODES\tPOOLS\tTIES")
		}
		kind := "RBLNClusterPolicy"
		sel, nodes, pools, ties := "-", "-", "-", "-"
		if r := in.Routing; r != nil {
			kind = "RBLNDriver"
			sel, nodes, pools, ties = fmt.Sprint(r.Selected), fmt.Sprint(r.Nodes), fmt.Sprint(len(r.Pools)), fmt.Sprint(len(r.Ties))
		}
		fmt.Fprintf(d.tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\n", kind, inputName(in), in.Operation, sel, nodes, pools, ties)
		return nil
	}
	b, err := json.MarshalIndent(in, "  ", "  ")
	if err != nil {
		return err
	}
	if !d.array {
		b, err = json.MarshalIndent(in, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(d.w, "%s\n", b)
		return err
	}
	sep := "[\n  "
	if d.n > 0 {
		sep = ",\n  "
	}
	_, err = fmt.Fprintf(d.w, "%s%s", sep, b)
	return err
}

func (d *documentStream) close() error {
	switch {
	case d.tw != nil:
		return d.tw.Flush()
	case d.format != formatJSON || !d.array:
		return nil
	case d.n == 0:
		_, err := io.WriteString(d.w, "[]\n")
		return err
	}
	_, err := io.WriteString(d.w, "\n]\n")
	return err
}

type policyDataOptions struct {
	judgeFlags
	name   string
	output outputFlag
}

func newPolicyDataCommand(s Streams) *cobra.Command {
	o := &policyDataOptions{output: newOutput(formatJSON, formatJSON, formatYAML)}
	cmd := &cobra.Command{
		Use:   "data -f values.yaml [--nodes nodes.yaml] [--drivers current.yaml] [--name NAME] [-o json|yaml]",
		Short: "Print the cluster view (data.driverguard_cluster) policies read",
		Long: `data judges the values exactly like 'check' and prints the cluster view the policies read at
data.driverguard_cluster — every driver, the cluster policy, every node with its routing, the node
count per family — as {"driverguard_cluster": ...}, ready for 'opa eval --data'. Without --name it
is the view after the release; with --name, the view that object was judged against (the objects
before it applied).`,
		Example: `  driverguard policy data -f values.yaml --nodes nodes.yaml --name rbln-driver-atom-canary > data.json
  driverguard policy input -f values.yaml --nodes nodes.yaml --name rbln-driver-atom-canary > input.json
  opa eval -d policies/ -d data.json -i input.json 'data.driverguard.platform.deny'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), s)
		},
	}
	o.judgeFlags.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.name, "name", "", "print the view the object with this name was judged against")
	o.output.register(cmd.Flags())
	return cmd
}

func (o *policyDataOptions) run(ctx context.Context, s Streams) error {
	var (
		doc   any
		names []string
	)
	var engine *policy.Engine
	before := func(_ context.Context, obj release.Object) error {
		names = append(names, obj.Name)
		if obj.Name != o.name {
			return nil
		}
		var err error
		if doc, err = engine.ClusterDocument(); err != nil {
			return err
		}
		return errFound
	}
	if err := oneStdin(append(o.valuesFlags.stdinUsers(), o.cluster.stdinUsers()...)...); err != nil {
		return err
	}
	r, err := o.render(ctx, s)
	if err != nil {
		return err
	}
	printWarnings(s.Err, r.Warnings)
	cl, err := o.cluster.read(ctx, s)
	if err != nil {
		return err
	}
	if engine, err = o.policy.engine(ctx, s); err != nil {
		return err
	}
	opts := release.Options{}
	if o.name != "" {
		opts.Before = before
	}
	_, err = o.judgeWith(ctx, r, cl, engine, opts)
	switch {
	case errors.Is(err, errFound):
	case err != nil:
		return err
	case o.name != "":
		return usageError(fmt.Errorf("no rendered object is named %q; the objects are %s", truncateValue(o.name), capList(names)))
	default:
		if doc, err = engine.ClusterDocument(); err != nil {
			return err
		}
	}
	return o.output.print(s.Out, map[string]any{policy.ClusterKey: doc}, nil)
}

type policyListOptions struct {
	policy policyFlags
	output outputFlag
}

func newPolicyListCommand(s Streams) *cobra.Command {
	o := &policyListOptions{output: newOutput(formatTable, formatTable, formatJSON, formatYAML)}
	cmd := &cobra.Command{
		Use:   "list [--policy DIR] [--disable NAME]",
		Short: "List the policies check and the webhook evaluate, with the names --disable takes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			engine, err := o.policy.engine(cmd.Context(), s)
			if err != nil {
				return err
			}
			infos := engine.Policies()
			return o.output.print(s.Out, infos, func(w io.Writer) error { return printPolicies(w, infos) })
		},
	}
	o.policy.addFlags(cmd.Flags(), "policy")
	o.output.register(cmd.Flags())
	return cmd
}

func printPolicies(w io.Writer, infos []policy.PolicyInfo) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "NAME\tRULES\tSTATE\tFILE\tTITLE")
	for _, p := range infos {
		state := "enabled"
		if p.Disabled {
			state = "disabled"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, strings.Join(p.Rules, ","), state, p.File, dash(p.Title))
	}
	return tw.Flush()
}
