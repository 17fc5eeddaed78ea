package suite

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// APIVersion and Kind identify a suite file.
const (
	APIVersion = "driverguard.rebellions.ai/v1alpha1"
	Kind       = "TestSuite"
	// FileSuffix names the files Find collects.
	FileSuffix = ".dgtest.yaml"
)

// Suite is one *.dgtest.yaml file (docs/policy-authoring.md, "Test suites"): the policies,
// the cluster the cases are judged against and the cases.
type Suite struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	// Policies are Rego folders or files (and data documents), relative to the suite file.
	Policies []Path `yaml:"policies"`
	// Library loads the bundled library's rules too (default true); its helpers
	// (driverguard.lib.util) are loaded either way.
	Library *bool `yaml:"library"`
	// CoverageOf, when set, are the rules this suite's coverage counts: globs on rule IDs
	// (path.Match; a Rego package matches both its bodies), e.g. driverguard.team.*. Each
	// must match a rule of the suite.
	CoverageOf []Pattern `yaml:"coverageOf"`
	// Inventory is the cluster every case is judged against, unless the case has its own.
	Inventory Inventory `yaml:"inventory"`
	Tests     []Case    `yaml:"tests"`

	// File is the suite's path as found, Dir its folder (what relative paths start from).
	File string `yaml:"-"`
	Dir  string `yaml:"-"`
}

// WithLibrary reports whether the bundled library is loaded.
func (s *Suite) WithLibrary() bool { return s.Library == nil || *s.Library }

// Inventory is a cluster: each kind a file or inline objects.
type Inventory struct {
	Nodes         *Objects `yaml:"nodes"`
	Drivers       *Objects `yaml:"drivers"`
	ClusterPolicy *Objects `yaml:"clusterPolicy"`
	// Pods are the workloads the plan's drains meet (Pods, PodDisruptionBudgets, ...).
	Pods *Objects `yaml:"pods"`
}

// Case is one test: what is judged, against which cluster, and what must come of it.
type Case struct {
	Name string `yaml:"name"`
	// Values are values files (relative to the suite), Set --set arguments on top.
	Values []Path   `yaml:"values"`
	Set    []string `yaml:"set"`
	// Objects are rendered objects (RBLNDriver, RBLNClusterPolicy) judged in Helm's order;
	// OldObjects the stored objects they update.
	Objects    *Objects `yaml:"objects"`
	OldObjects *Objects `yaml:"oldObjects"`
	// Review is an AdmissionReview answered as the webhook would.
	Review *Objects `yaml:"review"`
	// Operation is CREATE (default) or UPDATE for Objects.
	Operation string `yaml:"operation"`
	// Inventory replaces the suite's, kind by kind.
	Inventory *Inventory `yaml:"inventory"`
	Expect    Expect     `yaml:"expect"`

	// Line is where the case starts in its suite file (set by Load).
	Line int `yaml:"-"`
}

// Expect is what a case must come to.
type Expect struct {
	// Verdict is denied or allowed ("" checks none).
	Verdict string `yaml:"verdict"`
	// Results must each be found; with Exhaustive nothing else may be (pass results aside).
	Results    []ResultExpect `yaml:"results"`
	Exhaustive bool           `yaml:"exhaustive"`
	// Plan are the plan's node actions.
	Plan *PlanExpect `yaml:"plan"`
	// Images are the images the webhook's mutation sets on driver DaemonSets of the case's
	// objects, by DaemonSet name ("" when it sets none).
	Images map[string]string `yaml:"images"`
}

// ResultExpect is one result that must be found.
type ResultExpect struct {
	// Object is Kind/name, e.g. RBLNDriver/rbln-driver-canary.
	Object string `yaml:"object"`
	// Rule is a policy package (driverguard.lib.canary_selector: either of its deny and warn
	// rule bodies), one rule body (driverguard.lib.manager_version.warn) or a built-in rule
	// (ConflictingNodeSelector, FieldValueInvalid, DriverLoss, ...).
	Rule string `yaml:"rule"`
	// Result is fail, warn, audit or pass.
	Result string `yaml:"result"`
	// Message is a regular expression the message must match (fail, warn, audit).
	Message string `yaml:"message"`

	Line int `yaml:"-"`
}

// PlanExpect are the plan's actions per node (upgrade, blocked, none, ...).
type PlanExpect struct {
	Nodes map[string]string `yaml:"nodes"`
}

// Path is a file or folder named in a suite, with the line that names it.
type Path struct {
	Value string
	Line  int
}

// UnmarshalYAML keeps the line.
func (p *Path) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return fmt.Errorf("line %d: want a file path (a string)", n.Line)
	}
	p.Value, p.Line = n.Value, n.Line
	return nil
}

// Pattern is a glob on rule IDs named in a suite, with the line that names it.
type Pattern struct {
	Value string
	Line  int
}

// UnmarshalYAML keeps the line.
func (p *Pattern) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return fmt.Errorf("line %d: want a rule ID or a glob on rule IDs (a string), e.g. driverguard.team.*", n.Line)
	}
	p.Value, p.Line = n.Value, n.Line
	return nil
}

// Objects are Kubernetes objects given as files (a string, or a list of strings) or inline
// (a mapping, or a list of mappings), or both in one list.
type Objects struct {
	Files  []Path
	Inline []map[string]any
	Line   int
}

// UnmarshalYAML reads a path, an object or a list of either.
func (o *Objects) UnmarshalYAML(n *yaml.Node) error {
	o.Line = n.Line
	switch n.Kind {
	case yaml.SequenceNode:
		for _, item := range n.Content {
			if err := o.add(item); err != nil {
				return err
			}
		}
		return nil
	case yaml.ScalarNode, yaml.MappingNode:
		return o.add(n)
	}
	return fmt.Errorf("line %d: want a file, an object or a list of them", n.Line)
}

func (o *Objects) add(n *yaml.Node) error {
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag != "!!null":
		o.Files = append(o.Files, Path{Value: n.Value, Line: n.Line})
	case n.Kind == yaml.MappingNode:
		var m map[string]any
		if err := n.Decode(&m); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		o.Inline = append(o.Inline, m)
	default:
		return fmt.Errorf("line %d: want a file path or an inline object", n.Line)
	}
	return nil
}

// Empty reports whether nothing is given.
func (o *Objects) Empty() bool { return o == nil || len(o.Files)+len(o.Inline) == 0 }
