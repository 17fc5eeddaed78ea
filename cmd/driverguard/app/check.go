package app

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/routing"
)

type checkOptions struct {
	valuesFlags
	policy     policyFlags
	nodesFile  string
	failOnWarn bool
	output     outputFlag
}

// checkReport is the result of check; its JSON form is the -o json contract.
type checkReport struct {
	// Resources are the evaluated objects in render order, each with its messages.
	Resources []checkedResource `json:"resources"`
	// Policies are the evaluated policy packages; Disabled those turned off.
	Policies []string `json:"policies"`
	Disabled []string `json:"disabled,omitempty"`
	// Failures and Warnings count deny and warn messages.
	Failures int `json:"failures"`
	Warnings int `json:"warnings"`
	// Passed is false when there is a failure, or a warning with --fail-on-warn.
	Passed bool `json:"passed"`
}

type checkedResource struct {
	Kind string           `json:"kind"`
	Name string           `json:"name"`
	Deny []policy.Message `json:"deny"`
	Warn []policy.Message `json:"warn"`
}

func newCheckCommand(s Streams) *cobra.Command {
	o := &checkOptions{output: outputFlag{format: "table", allowed: []string{"table", "json"}}}
	cmd := &cobra.Command{
		Use:   "check -f values.yaml [--policy DIR] [--nodes nodes.yaml] [--fail-on-warn] [-o table|json]",
		Short: "Render the values and evaluate the bundled and your OPA policies on every object",
		Long: `check renders the values like 'render' and evaluates the policies on every rendered object — the
RBLNClusterPolicy and each RBLNDriver — with the input document the admission webhook builds
(source render, operation CREATE, cluster.drivers the other rendered drivers, cluster.clusterPolicy
the rendered one). With --nodes, cluster.nodes lists the nodes with the owner and pool routing
gives them under the rendered drivers.

The policies are the bundled library (driverguard.lib.*) plus every --policy directory: Rego v1
packages under driverguard. with deny and warn rules, and data documents (data.yaml with
driverguard_config: {disabled, allowed_registries, known_families}). 'driverguard policy input'
prints the exact input documents; 'driverguard policy test' runs your Rego tests.

Exit codes: 0 no failures; 1 a deny message (or, with --fail-on-warn, a warn message) or invalid
values; 2 unusable input: unreadable files, or a policy that does not compile or fails to
evaluate.`,
		Example: `  driverguard check -f examples/multi-driver.yaml
  driverguard check -f values.yaml --policy policies/ --nodes nodes.yaml --fail-on-warn
  driverguard check -f values.yaml --policy policies/ -o json > check.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.output.validate(); err != nil {
				return err
			}
			r, err := o.render()
			if err != nil {
				return err
			}
			printWarnings(s.Err, r.Warnings)
			var nodes []routing.Node
			if o.nodesFile != "" {
				if nodes, err = readNodes(o.nodesFile, s); err != nil {
					return err
				}
			}
			engine, err := o.policy.engine(cmd.Context())
			if err != nil {
				return err
			}
			st := engine.Status()
			rep := &checkReport{Policies: st.Policies, Disabled: st.Disabled}
			var kind, name string // of the object being evaluated
			inputs := func(yield func(*policy.Input) bool) {
				for in := range policy.RenderInputs(r.Drivers, &r.ClusterPolicy, nodes) {
					kind, name = objectKindName(in.Object)
					if !yield(in) {
						return
					}
				}
			}
			err = engine.EvaluateAll(cmd.Context(), inputs, func(_ *policy.Input, d *policy.Decision) error {
				rep.Resources = append(rep.Resources, checkedResource{Kind: kind, Name: name, Deny: d.Deny, Warn: d.Warn})
				rep.Failures += len(d.Deny)
				rep.Warnings += len(d.Warn)
				return nil
			})
			if err != nil {
				return usageError(fmt.Errorf("evaluating the policies on %s/%s: %w", kind, name, err))
			}
			rep.Passed = rep.Failures == 0 && (!o.failOnWarn || rep.Warnings == 0)
			if o.output.format == "json" {
				if err := writeJSON(s.Out, rep); err != nil {
					return err
				}
			} else {
				printCheck(s.Out, rep, o.failOnWarn)
			}
			if !rep.Passed {
				return invalidError(errSilent)
			}
			return nil
		},
	}
	o.addFlags(cmd.Flags())
	o.policy.addFlags(cmd.Flags(), "policy")
	cmd.Flags().StringVar(&o.nodesFile, "nodes", "", "node inventory for input.cluster.nodes: 'kubectl get nodes -o yaml' output or a Node stream ('-' for stdin)")
	cmd.Flags().BoolVar(&o.failOnWarn, "fail-on-warn", false, "exit 1 on warn messages too")
	cmd.Flags().StringVarP(&o.output.format, "output", "o", o.output.format, "output format: table or json")
	return cmd
}

// printCheck prints the results grouped by resource, conftest style: FAIL and WARN lines with
// the policy package, PASS for a resource without messages, and a summary.
func printCheck(w io.Writer, rep *checkReport, failOnWarn bool) {
	for _, res := range rep.Resources {
		title := res.Kind + "/" + res.Name
		fmt.Fprintln(w, title)
		if len(res.Deny)+len(res.Warn) == 0 {
			fmt.Fprintln(w, "  PASS")
		}
		for _, group := range []struct {
			label string
			msgs  []policy.Message
		}{{"FAIL", res.Deny}, {"WARN", res.Warn}} {
			for _, m := range group.msgs {
				// The resource heads the group; do not repeat it in front of every message.
				fmt.Fprintf(w, "  %s  %s: %s\n", group.label, m.Package, strings.TrimPrefix(m.Msg, title+": "))
			}
		}
	}
	verdict := "passed"
	if !rep.Passed {
		verdict = "FAILED"
		if rep.Failures == 0 && failOnWarn {
			verdict = "FAILED (--fail-on-warn)"
		}
	}
	fmt.Fprintf(w, "\n%d resources, %d policies: %s, %s; %s\n", len(rep.Resources), len(rep.Policies),
		plural(rep.Failures, "failure"), plural(rep.Warnings, "warning"), verdict)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// objectKindName names a rendered object.
func objectKindName(obj any) (kind, name string) {
	switch o := obj.(type) {
	case *v1alpha1.RBLNDriver:
		return "RBLNDriver", o.Name
	case *v1alpha1.RBLNClusterPolicy:
		return "RBLNClusterPolicy", o.Name
	}
	return fmt.Sprintf("%T", obj), ""
}
