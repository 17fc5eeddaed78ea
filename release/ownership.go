package release

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driverguard/driverguard/cluster"
)

// Helm's ownership metadata of an object it manages.
const (
	annotationReleaseName = "meta.helm.sh/release-name"
	labelInstance         = "app.kubernetes.io/instance"
	labelManagedBy        = "app.kubernetes.io/managed-by"
)

// ownerRelease is the Helm release that manages a stored object, "" when Helm does not: its
// meta.helm.sh/release-name annotation, else (objects without it) its app.kubernetes.io/instance
// label when app.kubernetes.io/managed-by is Helm.
func ownerRelease(m *metav1.ObjectMeta) string {
	if name, ok := m.Annotations[annotationReleaseName]; ok {
		return name
	}
	if m.Labels[labelManagedBy] == "Helm" {
		return m.Labels[labelInstance]
	}
	return ""
}

// ForeignObjectsError is a release that renders objects of the same name as stored objects
// another Helm release manages. Helm refuses to adopt them ("invalid ownership metadata"), and
// judging the release under the wrong name would miss what the right one deletes: the drivers
// it no longer renders would look unchanged.
type ForeignObjectsError struct {
	// Release is the release judged.
	Release string
	// Objects are the objects concerned ("RBLNDriver/rbln-driver"), sorted; Owners the
	// releases that manage them, sorted, without duplicates.
	Objects []string
	Owners  []string
}

func (e *ForeignObjectsError) Error() string {
	objs := strings.Join(e.Objects, ", ")
	if len(e.Objects) > 3 {
		objs = fmt.Sprintf("%s and %d more", strings.Join(e.Objects[:3], ", "), len(e.Objects)-3)
	}
	owners := make([]string, len(e.Owners))
	for i, o := range e.Owners {
		owners[i] = fmt.Sprintf("%q", o)
	}
	return fmt.Sprintf("release %q renders %s, stored in the cluster by Helm release %s (meta.helm.sh/release-name): "+
		"Helm refuses to adopt another release's objects, and judged as %q the drivers that release no longer renders would not be deleted",
		e.Release, objs, strings.Join(owners, ", "), e.Release)
}

// checkOwnership fails when objs render an object of the name of a stored one that another
// Helm release manages (objects no Helm release manages are not checked: a cluster of files
// written by hand carries no Helm metadata; nor are objects of a release without a name).
func checkOwnership(objs Objects, cl *cluster.State) error {
	stored := map[string]string{}
	for i := range cl.Drivers() {
		d := &cl.Drivers()[i]
		if owner := ownerRelease(&d.ObjectMeta); owner != "" {
			stored["RBLNDriver/"+d.Name] = owner
		}
	}
	if cp := cl.ClusterPolicy(); cp != nil {
		if owner := ownerRelease(&cp.ObjectMeta); owner != "" {
			stored["RBLNClusterPolicy/"+cp.Name] = owner
		}
	}
	if len(stored) == 0 || objs.ReleaseName == "" { // no release named: none is foreign
		return nil
	}
	e := &ForeignObjectsError{Release: objs.ReleaseName}
	foreign := func(key string) {
		if owner, ok := stored[key]; ok && owner != objs.ReleaseName {
			e.Objects = append(e.Objects, key)
			if !slices.Contains(e.Owners, owner) {
				e.Owners = append(e.Owners, owner)
			}
		}
	}
	if objs.ClusterPolicy != nil {
		foreign("RBLNClusterPolicy/" + objs.ClusterPolicy.Name)
	}
	for _, d := range objs.Drivers {
		foreign("RBLNDriver/" + d.Name)
	}
	if len(e.Objects) == 0 {
		return nil
	}
	slices.Sort(e.Objects)
	slices.Sort(e.Owners)
	return e
}
