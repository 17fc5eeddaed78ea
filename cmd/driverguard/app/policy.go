package app

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/routing"
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
			return usageError(errors.New("name a subcommand: test, input or list"))
		},
	}
	cmd.AddCommand(newPolicyTestCommand(s), newPolicyInputCommand(s), newPolicyListCommand(s))
	return cmd
}

type policyTestOptions struct {
	run     string
	verbose bool
	timeout time.Duration
	output  outputFlag
}

func newPolicyTestCommand(s Streams) *cobra.Command {
	o := &policyTestOptions{output: outputFlag{format: "table", allowed: []string{"table", "json"}}}
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
			if err := o.output.validate(); err != nil {
				return err
			}
			results, err := policy.RunTests(cmd.Context(), policy.TestOptions{Dirs: dirs, Run: o.run, Timeout: o.timeout})
			if err != nil {
				return usageError(err)
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
			if o.output.format == "json" {
				if err := writeJSON(s.Out, struct {
					Tests  []policy.TestResult `json:"tests"`
					Failed int                 `json:"failed"`
				}{nonNilTests(results), failed}); err != nil {
					return err
				}
			} else {
				printTests(s.Out, results, o.verbose)
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
	cmd.Flags().StringVarP(&o.output.format, "output", "o", o.output.format, "output format: table or json")
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
	valuesFlags
	nodesFile string
	name      string
}

func newPolicyInputCommand(s Streams) *cobra.Command {
	o := &policyInputOptions{}
	cmd := &cobra.Command{
		Use:   "input -f values.yaml [--nodes nodes.yaml] [--name NAME]",
		Short: "Print the exact input documents check evaluates, as JSON",
		Long: `input renders the values and prints the input documents 'check' gives the policies: a JSON array
with one document per rendered object (the RBLNClusterPolicy, then each RBLNDriver). --name
prints the one document of that object, ready for 'opa eval --input' or a test's 'with input as'.
The admission webhook builds the same shape (source admission, plus oldObject and userInfo);
docs/policy-input.schema.json is its schema.`,
		Example: `  driverguard policy input -f examples/multi-driver.yaml --nodes examples/nodes.yaml
  driverguard policy input -f values.yaml --name rbln-driver-atom-canary > input.json`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			r, err := o.render()
			if err != nil {
				return err
			}
			var nodes []routing.Node
			if o.nodesFile != "" {
				if nodes, err = readNodes(o.nodesFile, s); err != nil {
					return err
				}
			}
			inputs := []*policy.Input{}
			var names []string
			for in := range policy.RenderInputs(r.Drivers, &r.ClusterPolicy, nodes) {
				_, name := objectKindName(in.Object)
				names = append(names, name)
				if o.name == "" || o.name == name {
					inputs = append(inputs, in)
				}
			}
			if o.name == "" {
				return writeJSON(s.Out, inputs)
			}
			if len(inputs) == 0 {
				return usageError(fmt.Errorf("no rendered object is named %q; the objects are %s", o.name, strings.Join(names, ", ")))
			}
			return writeJSON(s.Out, inputs[0])
		},
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.nodesFile, "nodes", "", "node inventory for input.cluster.nodes: 'kubectl get nodes -o yaml' output or a Node stream ('-' for stdin)")
	cmd.Flags().StringVar(&o.name, "name", "", "print only the input document of the object with this name")
	return cmd
}

type policyListOptions struct {
	policy policyFlags
	output outputFlag
}

func newPolicyListCommand(s Streams) *cobra.Command {
	o := &policyListOptions{output: outputFlag{format: "table", allowed: []string{"table", "json"}}}
	cmd := &cobra.Command{
		Use:   "list [--policy DIR] [--disable NAME]",
		Short: "List the policies check and the webhook evaluate, with the names --disable takes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.output.validate(); err != nil {
				return err
			}
			engine, err := o.policy.engine(cmd.Context())
			if err != nil {
				return err
			}
			infos := engine.Policies()
			if o.output.format == "json" {
				return writeJSON(s.Out, infos)
			}
			tw := newTable(s.Out)
			fmt.Fprintln(tw, "NAME\tRULES\tSTATE\tFILE\tTITLE")
			for _, p := range infos {
				state := "enabled"
				if p.Disabled {
					state = "disabled"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, strings.Join(p.Rules, ","), state, p.File, dash(p.Title))
			}
			return tw.Flush()
		},
	}
	o.policy.addFlags(cmd.Flags(), "policy")
	cmd.Flags().StringVarP(&o.output.format, "output", "o", o.output.format, "output format: table or json")
	return cmd
}
