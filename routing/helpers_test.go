package routing

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

const (
	atomKernel = "6.8.0-90-generic"
	rhelKernel = "5.14.0-284.11.1.el9_2.x86_64"
	awsKernel  = "6.8.0-1015-AWS"
	rpiKernel  = "6.1.0+rpt-rpi-v8"
)

// drv returns a valid driver with the chart's default images and the given selector.
func drv(name string, sel map[string]string) v1alpha1.RBLNDriver {
	return v1alpha1.RBLNDriver{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rebellions.ai/v1alpha1", Kind: "RBLNDriver"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RBLNDriverSpec{
			Registry:     "repo.rebellions.ai",
			Image:        "rebellions/rbln-driver",
			Version:      "3.2.2",
			SMD:          &v1alpha1.SMDSpec{Registry: "repo.rebellions.ai", Image: "rebellions/rbln-smd"},
			NodeSelector: sel,
		},
	}
}

// withVersion returns d with another version.
func withVersion(d v1alpha1.RBLNDriver, v string) v1alpha1.RBLNDriver {
	d.Spec.Version = v
	return d
}

// sel builds a selector from key, value pairs.
func sel(kv ...string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// baseLabels are the labels of an atom candidate on Ubuntu 22.04.
func baseLabels() map[string]string {
	return map[string]string{
		operator.LabelDeployDriver: "true",
		operator.LabelFamily:       "atom",
		operator.LabelOSID:         "ubuntu",
		operator.LabelOSVersion:    "22.04",
		operator.LabelKernel:       atomKernel,
		"kubernetes.io/os":         "linux",
	}
}

// node returns an atom candidate with extra labels; a value "-" deletes the label.
func node(name string, kv ...string) Node {
	labels := baseLabels()
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "-" {
			delete(labels, kv[i])
			continue
		}
		labels[kv[i]] = kv[i+1]
	}
	return Node{Name: name, Labels: labels}
}

func famSel(f string) map[string]string { return sel(operator.LabelFamily, f) }

func canarySel() map[string]string {
	return sel(operator.LabelFamily, "atom", "env", "canary")
}

// byName indexes node results.
func byName(res *Result) map[string]NodeResult {
	m := make(map[string]NodeResult, len(res.Nodes))
	for _, n := range res.Nodes {
		m[n.Name] = n
	}
	return m
}
