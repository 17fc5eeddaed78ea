package policy_test

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/webhook"
	"github.com/driverguard/driverguard/webhook/webhooktest"
)

const schemaFile = "../docs/policy-input.schema.json"

func inputSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaFile)
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(schemaFile, doc))
	s, err := c.Compile(schemaFile)
	require.NoError(t, err)
	return s
}

// validate checks the JSON form of in (what policies see) against the schema.
func validate(t *testing.T, s *jsonschema.Schema, in *policy.Input) error {
	t.Helper()
	b, err := json.Marshal(in)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	return s.Validate(doc)
}

// TestRenderInputsMatchTheSchema: every input check builds, with and without nodes.
func TestRenderInputsMatchTheSchema(t *testing.T) {
	s := inputSchema(t)
	for _, nodes := range []string{"", exampleNodes} {
		inputs := renderInputs(t, exampleValues, nodes)
		require.Len(t, inputs, 4)
		for _, in := range inputs {
			assert.NoError(t, validate(t, s, in), objectName(in))
		}
	}
}

// TestAdmissionInputsMatchTheSchema: the inputs the webhook builds (recorded through its
// policy hook) for CREATE and UPDATE of both kinds, with userInfo, oldObject and nodes; and a
// hand-built admission input.
func TestAdmissionInputsMatchTheSchema(t *testing.T) {
	s := inputSchema(t)
	def := webhooktest.Driver(v1alpha1.DefaultDriverName, nil)
	canary := webhooktest.Driver("rbln-driver-atom-canary", webhooktest.Sel(operator.LabelFamily, "atom", "env", "canary"))
	cp := webhooktest.ClusterPolicy(false)
	nodes := webhooktest.RoutingNodes(
		webhooktest.Node("n1", webhooktest.CandidateLabels("env", "canary")),
		webhooktest.Node("n2", webhooktest.CandidateLabels()),
		webhooktest.Node("n3", webhooktest.CandidateLabels(operator.LabelFamily, "rebel")),
	)
	rec := &webhooktest.Evaluator{}
	hooks := webhook.New(cluster.NewStatic(cluster.FromLists(nodes, []v1alpha1.RBLNDriver{*def, *canary}, []v1alpha1.RBLNClusterPolicy{*cp}, nil)), webhook.Options{Policy: rec})
	newCanary := canary.DeepCopy()
	newCanary.Spec.Version = "3.3.0"
	newCP := cp.DeepCopy()
	newCP.Spec.Driver.UpgradePolicy.AutoUpgrade = true
	for _, req := range []admission.Request{
		webhooktest.Request(admissionv1.Create, webhooktest.Driver("rbln-driver-rebel", webhooktest.Sel(operator.LabelFamily, "rebel")), nil),
		webhooktest.Request(admissionv1.Update, newCanary, canary),
		webhooktest.Request(admissionv1.Update, newCP, cp),
	} {
		_, err := hooks.Review(t.Context(), webhooktest.MustJSON(webhooktest.Review(req)))
		require.NoError(t, err)
	}
	inputs := rec.Inputs()
	require.Len(t, inputs, 3, "the webhook evaluates every RBLNDriver and RBLNClusterPolicy request")
	for _, in := range inputs {
		assert.Equal(t, policy.SourceAdmission, in.Source)
		assert.NotNil(t, in.UserInfo)
		assert.NoError(t, validate(t, s, in), "%s %s", in.Operation, objectName(in))
	}
	assert.NotNil(t, inputs[1].OldObject)
	require.NotNil(t, inputs[1].Routing)
	assert.Equal(t, 1, inputs[1].Routing.Nodes, "the canary owns n1")
	assert.Nil(t, inputs[2].Routing, "a cluster policy has no routing")

	manual := &policy.Input{
		Object:    newCanary,
		OldObject: canary,
		Operation: policy.OperationUpdate,
		UserInfo:  &authenticationv1.UserInfo{Username: "alice", Groups: []string{"platform"}, Extra: map[string]authenticationv1.ExtraValue{"scopes": {"a"}}},
		Source:    policy.SourceAdmission,
		Routing:   &policy.Routing{Pools: []policy.Pool{{Nodes: []string{"n2"}}}, Unpooled: []policy.UnpooledNode{}, Ties: []policy.Tie{}, PotentialTies: []policy.PotentialTie{}},
	}
	assert.NoError(t, validate(t, s, manual))
}

// TestClusterDataMatchesTheSchema: data.driverguard_cluster, as the engine holds it after a
// sync and a patch, matches $defs.ClusterData.
func TestClusterDataMatchesTheSchema(t *testing.T) {
	raw, err := os.ReadFile(schemaFile)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	require.NoError(t, c.AddResource(schemaFile, doc))
	s, err := c.Compile(schemaFile + "#/$defs/ClusterData")
	require.NoError(t, err)

	e := newEngine(t, policy.Options{})
	def := webhooktest.Driver(v1alpha1.DefaultDriverName, nil)
	nodes := readNodes(t, exampleNodes)
	view := &policy.ClusterView{Drivers: []*v1alpha1.RBLNDriver{def}, ClusterPolicy: webhooktest.ClusterPolicy(false)}
	for _, n := range nodes {
		view.Nodes = append(view.Nodes, policy.ClusterNode{Name: n.Name, Labels: n.Labels, Owner: "rbln-driver"})
	}
	require.NoError(t, e.SyncCluster(t.Context(), view))
	require.NoError(t, e.PatchCluster(t.Context(), &policy.ClusterPatch{Drivers: []*v1alpha1.RBLNDriver{webhooktest.Driver("rbln-driver-atom", webhooktest.Sel(operator.LabelFamily, "atom"))}}))
	got, err := e.ClusterDocument()
	require.NoError(t, err)
	b, err := json.Marshal(got)
	require.NoError(t, err)
	data, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	require.NoError(t, s.Validate(data))
	assert.Len(t, got.(map[string]any)["drivers"], 2)
}

// TestSchemaRejectsWhatPoliciesNeverSee: the schema is strict enough to catch drift.
func TestSchemaRejectsWhatPoliciesNeverSee(t *testing.T) {
	s := inputSchema(t)
	good := func() *policy.Input {
		return &policy.Input{Object: webhooktest.Driver("rbln-driver", nil), Operation: "CREATE", Source: policy.SourceRender}
	}
	require.NoError(t, validate(t, s, good()))
	for name, mutate := range map[string]func(in *policy.Input){
		"unknown source":           func(in *policy.Input) { in.Source = "cli" },
		"render with userInfo":     func(in *policy.Input) { in.UserInfo = &authenticationv1.UserInfo{Username: "x"} },
		"UPDATE without oldObject": func(in *policy.Input) { in.Operation = "UPDATE" },
		"a cluster in the input":   func(in *policy.Input) { in.Object = map[string]any{"kind": "RBLNDriver", "cluster": map[string]any{}} },
		"oldObject on CREATE": func(in *policy.Input) {
			in.Source, in.OldObject = policy.SourceAdmission, webhooktest.Driver("rbln-driver", nil)
		},
		"an object of another kind": func(in *policy.Input) {
			in.Object = map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "x"}}
		},
		"a field the CRD lacks": func(in *policy.Input) {
			in.Object = map[string]any{"apiVersion": "rebellions.ai/v1alpha1", "kind": "RBLNDriver", "metadata": map[string]any{"name": "x"}, "spec": map[string]any{"imgae": "x"}}
		},
		"no operation": func(in *policy.Input) { in.Operation = "" },
	} {
		in := good()
		mutate(in)
		assert.Error(t, validate(t, s, in), name)
	}
}

// TestSchemaCoversTheGoTypes: every JSON field of the Go types is a property of the schema
// definition that documents it, and the other way round.
func TestSchemaCoversTheGoTypes(t *testing.T) {
	raw, err := os.ReadFile(schemaFile)
	require.NoError(t, err)
	var root map[string]any
	require.NoError(t, json.Unmarshal(raw, &root))
	at := func(path ...string) map[string]any {
		var cur any = root
		for _, p := range path {
			cur = cur.(map[string]any)[p]
		}
		return cur.(map[string]any)
	}
	defs := at("$defs")
	for _, tt := range []struct {
		typ    any
		schema map[string]any
	}{
		{policy.Input{}, root},
		{policy.Routing{}, defs["Routing"].(map[string]any)},
		{policy.Pool{}, defs["Pool"].(map[string]any)},
		{policy.UnpooledNode{}, defs["UnpooledNode"].(map[string]any)},
		{policy.Tie{}, defs["Tie"].(map[string]any)},
		{policy.PotentialTie{}, defs["PotentialTie"].(map[string]any)},
		{authenticationv1.UserInfo{}, defs["UserInfo"].(map[string]any)},
		{v1alpha1.RBLNDriverSpec{}, defs["RBLNDriverSpec"].(map[string]any)},
		{v1alpha1.ManagerSpec{}, at("$defs", "RBLNDriverSpec", "properties", "manager")},
		{v1alpha1.SMDSpec{}, at("$defs", "RBLNDriverSpec", "properties", "smd")},
		{v1alpha1.RBLNClusterPolicySpec{}, at("$defs", "RBLNClusterPolicy", "properties", "spec")},
		{v1alpha1.ClusterDriverSpec{}, at("$defs", "RBLNClusterPolicy", "properties", "spec", "properties", "driver")},
		{v1alpha1.RDSSpec{}, at("$defs", "RBLNClusterPolicy", "properties", "spec", "properties", "rds")},
		{v1alpha1.RDSDeviceSelection{}, at("$defs", "RBLNClusterPolicy", "properties", "spec", "properties", "rds", "properties", "deviceSelection", "items")},
		{v1alpha1.UpgradePolicy{}, defs["UpgradePolicy"].(map[string]any)},
		{v1alpha1.WaitForCompletionSpec{}, at("$defs", "UpgradePolicy", "properties", "waitForCompletion")},
		{v1alpha1.NPUPodDeletionSpec{}, at("$defs", "UpgradePolicy", "properties", "npuPodDeletion")},
		{v1alpha1.DrainSpec{}, at("$defs", "UpgradePolicy", "properties", "drain")},
		{v1alpha1.RebootSpec{}, at("$defs", "UpgradePolicy", "properties", "reboot")},
		{v1alpha1.RebootImage{}, at("$defs", "UpgradePolicy", "properties", "reboot", "properties", "image")},
	} {
		typ := reflect.TypeOf(tt.typ)
		t.Run(typ.Name(), func(t *testing.T) {
			assert.Equal(t, jsonFields(typ), sortedKeys(tt.schema["properties"].(map[string]any)))
		})
	}
}

func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
