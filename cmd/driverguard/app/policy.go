package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/action"
	"github.com/driverguard/driverguard/output"
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
	cmd.AddCommand(newPolicyTestCommand(s), newPolicyInputCommand(s), newPolicyDataCommand(s), newPolicyListCommand(s), newPolicyRulesCommand(s))
	return cmd
}

func newPolicyTestCommand(s Streams) *cobra.Command {
	job := action.NewPolicyTest(s.cfg)
	var verbose bool
	format := newOutput(formatTable, formatTable, formatJSON, formatYAML)
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
			job.Dirs = dirs
			res, err := job.Run(cmd.Context())
			if err != nil {
				return err
			}
			if len(dirs) > 0 && res.Yours() == 0 {
				fmt.Fprintf(s.Err, "Warning: no tests (test_* rules) in %s\n", escapedList(dirs))
			}
			if err := format.print(s.Out, res, func(w io.Writer) error { output.PolicyTests(w, res.Tests, verbose); return nil }); err != nil {
				return err
			}
			return failedUnless(res.Failed == 0)
		},
	}
	cmd.Flags().StringVar(&job.Match, "run", "", "run only the tests whose package.name matches this regular expression")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "list the bundled library's tests too")
	durationVar(cmd.Flags(), &job.Timeout, "timeout", 5*time.Second, testTimeoutRange, "deadline of one test")
	format.register(cmd.Flags())
	return cmd
}

// escapedList joins values from the input, each escaped (output.Escape), with ", ".
func escapedList(values []string) string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = output.Escape(v)
	}
	return strings.Join(out, ", ")
}

// testTimeoutRange: a Rego test runs in microseconds to milliseconds; below 10ms a loaded CI
// runner fails tests that pass; above 10m a test that loops holds the job.
var testTimeoutRange = durationRange{min: 10 * time.Millisecond, max: 10 * time.Minute,
	low: "tests that pass fail on a loaded machine"}

func newPolicyInputCommand(s Streams) *cobra.Command {
	job := action.NewPolicyInput(s.cfg)
	output := newOutput(formatJSON, formatJSON, formatYAML, formatTable)
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
			out := newDocumentStream(s.Out, output.format, job.Name == "")
			job.OnRenderWarnings = func(w []action.Warning) { printWarnings(s.Err, w) }
			if job.Name == "" {
				job.OnInput = out.write // written as it is evaluated
			}
			inputs, err := job.Run(cmd.Context())
			if err != nil {
				return err
			}
			for _, in := range inputs {
				if err := out.write(in); err != nil {
					return err
				}
			}
			return out.close()
		},
	}
	addJudgeFlags(cmd.Flags(), &job.Judge)
	cmd.Flags().StringVar(&job.Name, "name", "", "print only the input document of the object with this name")
	output.register(cmd.Flags())
	return cmd
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

func (d *documentStream) write(in *action.Input) error {
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
		fmt.Fprintf(d.tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\n", kind, output.Escape(action.InputName(in)), output.Escape(in.Operation), sel, nodes, pools, ties)
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

func newPolicyDataCommand(s Streams) *cobra.Command {
	job := action.NewPolicyData(s.cfg)
	output := newOutput(formatJSON, formatJSON, formatYAML)
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
			job.OnRenderWarnings = func(w []action.Warning) { printWarnings(s.Err, w) }
			doc, err := job.Run(cmd.Context())
			if err != nil {
				return err
			}
			return output.print(s.Out, doc, nil)
		},
	}
	addJudgeFlags(cmd.Flags(), &job.Judge)
	cmd.Flags().StringVar(&job.Name, "name", "", "print the view the object with this name was judged against")
	output.register(cmd.Flags())
	return cmd
}

func newPolicyListCommand(s Streams) *cobra.Command {
	job := action.NewPolicyList(s.cfg)
	output := newOutput(formatTable, formatTable, formatJSON, formatYAML)
	cmd := &cobra.Command{
		Use:   "list [--policy DIR] [--disable NAME] [-o table|json|yaml]",
		Short: "List the policies' rules: each bundled and --policy policy's deny and warn",
		Long: `list shows the rules of the Rego policies, one line each: each policy's deny and warn rule
bodies (<package>.deny, <package>.warn; --disable and --enforcement take the package, without
its driverguard. prefix or in full). LEVEL is what the rule says when it fires, ENFORCEMENT
what its findings do (a deny body of a policy in warn enforcement warns, one in audit is
reported only), SOURCE library (the bundled policies) or policy (your directories), HOME the
file:line of the rule body.

-o json and -o yaml list the same rules in the same order, one entry per rule: name (the policy
name --disable and --enforcement take; policy is the same), its id, level, enforcement, title,
home, source and disabled, its package and mode (the enforcement configured for the body).
The built-in rules, which --disable cannot turn off, are in 'policy rules' (with every rule:
-o json prints the registry as {"rules": [...]}). docs/rules.md lists the built-in and bundled
rules.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := job.Run(cmd.Context())
			if err != nil {
				return err
			}
			// Every format lists the policies' rules: the table one line per rule, -o json
			// and -o yaml one entry per rule, with its policy's name, package and mode.
			listed := res.Listed()
			rules := make([]action.Rule, len(listed))
			for i, l := range listed {
				rules[i] = l.Rule
			}
			return output.print(s.Out, listed, func(w io.Writer) error { return printRules(w, rules) })
		},
	}
	addPolicyFlags(cmd.Flags(), &job.Policy, "policy")
	output.register(cmd.Flags())
	return cmd
}

func newPolicyRulesCommand(s Streams) *cobra.Command {
	job := action.NewPolicyList(s.cfg)
	output := newOutput(formatTable, formatTable, formatJSON, formatYAML)
	cmd := &cobra.Command{
		Use:   "rules [--policy DIR] [--disable NAME] [-o table|json|yaml]",
		Short: "The rule registry: every rule that can fire, built-in and Rego, with its level, enforcement and home",
		Long: `rules prints the rule registry (docs/rules.md): every built-in rule and every Rego rule body
(<package>.deny, <package>.warn) of the bundled library and the --policy directories, each with
its ID (what findings name it by), level (what it says when it fires), enforcement (what its
findings do), source (builtin, library, policy), home (Go package or file:line) and title. The
table is 'policy list's with the built-in rules after the policies'; -o json prints {"rules": [...]}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := job.Run(cmd.Context())
			if err != nil {
				return err
			}
			doc := struct {
				Rules []action.Rule `json:"rules"`
			}{res.Rules}
			return output.print(s.Out, doc, func(w io.Writer) error { return printRules(w, res.Rules) })
		},
	}
	addPolicyFlags(cmd.Flags(), &job.Policy, "policy")
	output.register(cmd.Flags())
	return cmd
}

// printRules lists the rules one per line.
func printRules(w io.Writer, rules []action.Rule) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "RULE\tLEVEL\tENFORCEMENT\tSTATE\tSOURCE\tHOME\tTITLE")
	for _, r := range rules {
		state := "enabled"
		if r.Disabled {
			state = "disabled"
		}
		esc := output.Escape
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", esc(r.ID), esc(string(r.Level)), esc(string(r.Enforcement)), state, esc(string(r.Source)), esc(r.Home), esc(dash(r.Title)))
	}
	return tw.Flush()
}
