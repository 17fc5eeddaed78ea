package webhook

import (
	"context"
	"slices"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ownerRefsInterval is how often ownerRefs re-checks the webhook configurations (Helm
// re-creates them on every upgrade).
const ownerRefsInterval = time.Minute

// ownerRefs keeps an ownerReference from the webhook configurations to the release's
// ClusterRole. The chart creates the configurations as post-install/post-upgrade hooks, so
// that `helm install` does not route its own RBLNDrivers to a webhook that is not running yet;
// Helm does not delete hooks on uninstall, but the garbage collector deletes them with their
// owner, which Helm does delete.
type ownerRefs struct {
	client client.Client
	reader client.Reader // uncached: a cache would need list/watch on every ClusterRole
	owner  string
	names  WebhookConfigurationNames
	log    logr.Logger
}

func (o *ownerRefs) NeedLeaderElection() bool { return false }

func (o *ownerRefs) Start(ctx context.Context) error {
	tick := time.NewTicker(ownerRefsInterval)
	defer tick.Stop()
	for {
		if err := o.ensure(ctx); err != nil && ctx.Err() == nil {
			o.log.Error(err, "setting the owner of the webhook configurations", "owner", o.owner)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (o *ownerRefs) ensure(ctx context.Context) error {
	var role rbacv1.ClusterRole
	if err := o.reader.Get(ctx, types.NamespacedName{Name: o.owner}, &role); err != nil {
		return err
	}
	ref := metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: role.Name, UID: role.UID}
	objs := map[string]client.Object{}
	if n := o.names.Validating; n != "" {
		objs[n+"/validating"] = &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: n}}
	}
	if n := o.names.Mutating; n != "" {
		objs[n+"/mutating"] = &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: n}}
	}
	for _, obj := range objs {
		if err := o.reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			if apierrors.IsNotFound(err) {
				continue // not created yet (the hooks run after the Deployment)
			}
			return err
		}
		if slices.ContainsFunc(obj.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == ref.UID }) {
			continue
		}
		patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
		obj.SetOwnerReferences(append(obj.GetOwnerReferences(), ref))
		if err := o.client.Patch(ctx, obj, patch); err != nil {
			return err
		}
		o.log.Info("owner set", "object", obj.GetName(), "owner", o.owner)
	}
	return nil
}
