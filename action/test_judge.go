package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/plan"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/render"
	"github.com/driverguard/driverguard/suite"
	"github.com/driverguard/driverguard/webhook"
)

// judgeCase judges one case against its cluster.
func (t *Test) judgeCase(ctx context.Context, run *suiteRun, c *suite.Case) (*suite.Outcome, error) {
	inv := run.inventory
	if c.Inventory != nil {
		var err error
		if inv, err = t.readInventory(ctx, run.s, c.Inventory, inv); err != nil {
			return nil, err
		}
	}
	switch {
	case !c.Review.Empty():
		return t.judgeReview(ctx, run, c, inv)
	case len(c.Values) > 0:
		opts := RenderOptions{ReleaseName: DefaultReleaseName}
		for _, p := range c.Values {
			opts.ValueFiles = append(opts.ValueFiles, run.s.Resolve(p))
		}
		opts.Values = c.Set
		r, err := t.cfg.render(ctx, &opts)
		var invalid *InvalidError
		if errors.As(err, &invalid) {
			return invalidOutcome(invalid, run), nil
		}
		if err != nil {
			return nil, err
		}
		return t.judgeObjects(ctx, run, c, inv, release.FromRender(r, DefaultReleaseName), r)
	default:
		objs, daemonSets, err := t.caseObjects(ctx, run.s, c.Objects)
		if err != nil {
			return nil, err
		}
		var oldDaemonSets []decode.Document
		if !c.OldObjects.Empty() {
			var old release.Objects
			if old, oldDaemonSets, err = t.caseObjects(ctx, run.s, c.OldObjects); err != nil {
				return nil, err
			}
			inv.drivers = append(slices.Clone(inv.drivers), old.Drivers...)
			if old.ClusterPolicy != nil {
				inv.policies = append(slices.Clone(inv.policies), *old.ClusterPolicy)
			}
		}
		if err := checkOperation(c, objs, inv); err != nil {
			return nil, err
		}
		out := &suite.Outcome{Allowed: true, Results: []suite.Result{}}
		if objs.ClusterPolicy != nil || len(objs.Drivers) > 0 {
			if out, err = t.judgeObjects(ctx, run, c, inv, objs, &render.Result{}); err != nil {
				return nil, err
			}
		}
		if len(daemonSets) == 0 {
			return out, nil
		}
		// Driver DaemonSets come after the drivers they name, as the operator creates them:
		// the case's drivers are stored by then.
		inv.drivers = append(slices.Clone(inv.drivers), objs.Drivers...)
		return judgeDaemonSets(ctx, run, c, inv, daemonSets, oldDaemonSets, out)
	}
}

// judgeDaemonSets answers each driver DaemonSet as the webhook answers its admission (an
// UPDATE when oldObjects hold a DaemonSet of the same name), adding to out.
func judgeDaemonSets(ctx context.Context, run *suiteRun, c *suite.Case, inv inventory, daemonSets, old []decode.Document, out *suite.Outcome) (*suite.Outcome, error) {
	bad := func(d decode.Document, err error) error {
		return &suite.Error{File: run.s.File, Line: c.Objects.Line, Msg: fmt.Sprintf("%s: %v", d.Source, err)}
	}
	stored := map[string][]byte{} // the old DaemonSets by name
	for _, d := range old {
		meta, err := documentMeta(d)
		if err != nil {
			return nil, bad(d, err)
		}
		stored[meta.Name] = d.Data
	}
	for _, ds := range daemonSets {
		meta, err := documentMeta(ds)
		if err != nil {
			return nil, bad(ds, err)
		}
		req := &admissionv1.AdmissionRequest{
			UID:       "driverguard-test",
			Kind:      metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"},
			Resource:  metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"},
			Name:      meta.Name,
			Namespace: meta.Namespace,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: ds.Data},
		}
		if data, ok := stored[meta.Name]; ok {
			req.Operation, req.OldObject = admissionv1.Update, runtime.RawExtension{Raw: data}
		}
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
			Request:  req,
		})
		if err != nil {
			return nil, err
		}
		got, err := reviewOutcome(ctx, run, body, inv)
		if err != nil {
			return nil, err
		}
		out.Allowed = out.Allowed && got.Allowed
		out.Objects = append(out.Objects, got.Objects...)
		out.Results = append(out.Results, got.Results...)
		if out.Images == nil {
			out.Images = map[string]string{}
		}
		maps.Copy(out.Images, got.Images)
	}
	return out, nil
}

// mutatedImage is the image of a driver DaemonSet's driver or RSMD container once the
// webhook's patch is applied ("" when the webhook sets none).
func mutatedImage(object, patch []byte) (string, error) {
	if len(patch) == 0 {
		return "", nil
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return "", fmt.Errorf("the webhook's patch: %w", err)
	}
	patched, err := p.Apply(object)
	if err != nil {
		return "", fmt.Errorf("applying the webhook's patch: %w", err)
	}
	var ds appsv1.DaemonSet
	if err := json.Unmarshal(patched, &ds); err != nil {
		return "", fmt.Errorf("the patched DaemonSet: %w", err)
	}
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name == operator.ContainerDriver || c.Name == operator.ContainerSMD {
			return c.Image, nil
		}
	}
	return "", nil
}

// checkOperation holds a case to its operation: UPDATE needs every object stored already,
// CREATE none.
func checkOperation(c *suite.Case, objs release.Objects, inv inventory) error {
	stored := func(name string) bool {
		return slices.ContainsFunc(inv.drivers, func(d v1alpha1.RBLNDriver) bool { return d.Name == name })
	}
	if cp := objs.ClusterPolicy; cp != nil {
		storedPolicy := slices.ContainsFunc(inv.policies, func(p v1alpha1.RBLNClusterPolicy) bool { return p.Name == cp.Name })
		switch {
		case c.Operation == "UPDATE" && !storedPolicy:
			return fmt.Errorf("operation UPDATE: RBLNClusterPolicy %s is not stored (give it in oldObjects or the inventory's clusterPolicy)", cp.Name)
		case c.Operation != "UPDATE" && storedPolicy:
			return fmt.Errorf("operation CREATE: RBLNClusterPolicy %s is stored already (oldObjects or the inventory's clusterPolicy): say operation: UPDATE", cp.Name)
		}
	}
	for _, d := range objs.Drivers {
		switch {
		case c.Operation == "UPDATE" && !stored(d.Name):
			return fmt.Errorf("operation UPDATE: RBLNDriver %s is not stored (give it in oldObjects or the inventory's drivers)", d.Name)
		case c.Operation != "UPDATE" && stored(d.Name):
			return fmt.Errorf("operation CREATE: RBLNDriver %s is stored already (oldObjects or the inventory's drivers): say operation: UPDATE", d.Name)
		}
	}
	return nil
}

// judgeObjects applies objs to the case's cluster as Check does, and plans when the case
// expects a plan.
func (t *Test) judgeObjects(ctx context.Context, run *suiteRun, c *suite.Case, inv inventory, objs release.Objects, r *render.Result) (*suite.Outcome, error) {
	st := inv.state()
	d := &Decision{}
	j, err := d.apply(ctx, objs, r, st, run.engine)
	if err != nil {
		return nil, err
	}
	rep := j.report(false)
	out := &suite.Outcome{Allowed: rep.Passed, Rules: run.judgedBy, Results: []suite.Result{}}
	for _, o := range rep.Resources {
		out.Objects = append(out.Objects, o.Kind+"/"+o.Name)
	}
	// The nodes that carry a driver now are judged by DriverLoss.
	for _, n := range inv.nodes {
		if n.Labels[operator.LabelOwner] != "" {
			out.Objects = append(out.Objects, "Node/"+n.Name)
		}
	}
	out.Results = suiteResults(rep.Findings)
	if c.Expect.Plan != nil {
		p, err := plan.Make(ctx, plan.Inputs{Objects: &objs, Cluster: inv.state(), Workloads: inv.workloads,
			Apply: release.Options{Decider: d.decider(run.engine), Data: run.engine}})
		if err != nil {
			return nil, fmt.Errorf("planning: %w", err)
		}
		out.Plan = map[string]string{}
		for _, n := range p.Nodes {
			out.Plan[n.Name] = n.Action
		}
	}
	return out, nil
}

// suiteResults are the findings a case's expectations are about: those of the objects
// judged (each rule body its own rule) and the nodes that would lose their driver. Render
// warnings, input warnings and the drift now are not results of a case.
func suiteResults(fs []finding.Finding) []suite.Result {
	out := []suite.Result{}
	for _, f := range fs {
		switch {
		case f.Rule == finding.RuleRenderWarning, f.Rule == finding.RuleInputWarning, f.Object.Kind == finding.KindNode && f.Rule != finding.RuleDriverLoss:
			continue
		case f.Object.Kind == "": // the count of what a report does not list (driver losses)
			continue
		}
		out = append(out, suite.Result{Object: f.Object.String(), Rule: f.Rule, Result: suite.ResultOf(f.Level), Message: f.Text()})
	}
	return out
}

// invalidOutcome is values that do not render: denied, one InvalidValues result.
func invalidOutcome(err *InvalidError, run *suiteRun) *suite.Outcome {
	return &suite.Outcome{Allowed: false, Objects: []string{"Values/values"}, Rules: run.rules,
		Results: []suite.Result{{Object: "Values/values", Rule: RuleInvalidValues, Result: suite.ResultFail, Message: err.Error()}}}
}

// judgeReview answers the case's AdmissionReview through the webhook's handler.
func (t *Test) judgeReview(ctx context.Context, run *suiteRun, c *suite.Case, inv inventory) (*suite.Outcome, error) {
	body, err := objectBody(ctx, t.cfg, run.s, c.Review)
	if err != nil {
		return nil, err
	}
	return reviewOutcome(ctx, run, body, inv)
}

// reviewOutcome answers body through the webhook's handler with inv as the cluster.
func reviewOutcome(ctx context.Context, run *suiteRun, body []byte, inv inventory) (*suite.Outcome, error) {
	js, err := yaml.YAMLToJSON(body)
	if err != nil {
		return nil, fmt.Errorf("the review is not YAML or JSON: %w", err)
	}
	review, verdict, err := webhook.New(cluster.NewStatic(inv.state()), webhook.Options{Policy: run.engine}).Decide(ctx, js)
	if err != nil {
		return nil, err
	}
	req, resp := review.Request, review.Response
	name := req.Kind.Kind + "/" + req.Name
	out := &suite.Outcome{Allowed: resp.Allowed, Objects: []string{name}, Rules: run.judgedBy,
		Results: []suite.Result{}}
	if req.Kind.Kind == "DaemonSet" { // mutated, not judged by the rules
		out.Rules = nil
		image, err := mutatedImage(req.Object.Raw, resp.Patch)
		if err != nil {
			return nil, err
		}
		out.Images = map[string]string{req.Name: image}
	}
	switch {
	case verdict != nil: // the findings the response words, as the decision made them
		out.Results = suiteResults(append(verdict.Findings(), verdict.OmittedFindings()...))
		for i := range out.Results {
			out.Results[i].Object = name // as the request names it (a DaemonSet without its namespace)
		}
	case !resp.Allowed && resp.Result != nil: // a request the webhook could not decide on
		out.Results = append(out.Results, suite.Result{Object: name, Rule: string(resp.Result.Reason), Result: suite.ResultFail, Message: resp.Result.Message})
	}
	return out, nil
}
