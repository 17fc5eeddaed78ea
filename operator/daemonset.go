package operator

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// UpdateStrategyOnDelete is the update strategy of every DaemonSet the operator creates: it
// replaces driver pods itself, node by node.
const UpdateStrategyOnDelete = "OnDelete"

// DriverDaemonSet is the name of driver cr's DaemonSet for a pool.
func DriverDaemonSet(cr, pool string) string { return cr + "-" + pool }

// DriverDaemonSetLabels are a driver DaemonSet's labels, which are also its selector and its
// pod template's labels.
func DriverDaemonSetLabels(cr, pool string) map[string]string {
	return map[string]string{
		LabelAppName:   AppName,
		LabelComponent: ComponentDriver,
		LabelPool:      pool,
		LabelInstance:  cr,
	}
}

// SMDDaemonSet is the name of driver cr's RSMD DaemonSet.
func SMDDaemonSet(cr string) string { return cr + SMDSuffix }

// SMDDaemonSetLabels are an RSMD DaemonSet's labels, selector and pod template labels.
func SMDDaemonSetLabels(cr string) map[string]string {
	return map[string]string{
		LabelAppName:   AppName,
		LabelComponent: ComponentSMD,
		LabelInstance:  cr,
	}
}

// SMDNodeSelector is the pod nodeSelector of driver cr's RSMD DaemonSet.
func SMDNodeSelector(cr string) map[string]string {
	return map[string]string{
		LabelDeployDriver: DeployDriverTrue,
		LabelOwner:        cr,
		LabelDeploySMD:    DeployDriverTrue,
	}
}

// RDSExclusion is the node affinity of every non-RDS pool's pods while the cluster policy
// enables RDS: a required term that keeps them off nodes whose LabelRDSPresent is "true". Its
// parts: (key, operator, values) of the one match expression of the one term.
func RDSExclusion() (key, operator string, values []string) {
	return LabelRDSPresent, "NotIn", []string{DeployDriverTrue}
}

// Kind is which of the operator's DaemonSets a DaemonSet is.
type Kind int

const (
	// NotOperator: not a DaemonSet the operator creates.
	NotOperator Kind = iota
	// DriverKind: a driver DaemonSet (component rbln-driver).
	DriverKind
	// SMDKind: an RSMD DaemonSet (component rbln-smd).
	SMDKind
)

// Recognize tells an operator DaemonSet by its labels: app.kubernetes.io/name is
// rbln-npu-operator and app.kubernetes.io/component rbln-driver or rbln-smd. cr is its
// rebellions.ai/driver-instance label and pool its rebellions.ai/driver-node-pool label ("" when
// absent).
func Recognize(labels map[string]string) (kind Kind, cr, pool string) {
	if labels[LabelAppName] != AppName {
		return NotOperator, "", ""
	}
	switch labels[LabelComponent] {
	case ComponentDriver:
		kind = DriverKind
	case ComponentSMD:
		kind = SMDKind
	default:
		return NotOperator, "", ""
	}
	return kind, labels[LabelInstance], labels[LabelPool]
}

// DaemonSetNameProblem says why the API server would refuse driver cr's DaemonSet for a pool,
// "" when it accepts it: the pool name is the value of a label, and <cr>-<pool> the name of a
// DaemonSet. The operator composes both without checking them, so its reconcile of cr stops at
// the refused DaemonSet.
func DaemonSetNameProblem(cr, pool string) string {
	var problems []string
	if errs := validation.IsValidLabelValue(pool); len(errs) > 0 {
		problems = append(problems, fmt.Sprintf("the pool name %q is not a valid label value for %s (%s)", pool, LabelPool, strings.Join(errs, "; ")))
	}
	name := DriverDaemonSet(cr, pool)
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		problems = append(problems, fmt.Sprintf("the DaemonSet name %q is not a DNS-1123 subdomain (%s)", name, strings.Join(errs, "; ")))
	}
	return strings.Join(problems, "; ")
}
