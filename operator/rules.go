package operator

// Rule is one behaviour of rbln-npu-operator this package models, with the operator file and
// commit it was read from (github.com/RBLN-SW/rbln-npu-operator).
type Rule struct {
	// ID names the rule in docs/operator.md.
	ID string
	// Summary says what the operator does, in one sentence.
	Summary string
	// File is the operator source file the rule was read from; Commit the commit (abbreviated).
	File   string
	Commit string
}

// Operator source files and the commits the rules were read from: the newest version of each
// file found (see docs/operator.md, "Which operator").
const (
	fileNodePool      = "internal/driver/components/node_pool.go"
	fileDaemonSet     = "internal/driver/components/driver_manager_daemonset.go"
	filePodSpec       = "internal/driver/components/driver_manager_podspec.go"
	fileDriverManager = "internal/driver/components/driver_manager.go"
	fileComponents    = "internal/driver/components/consts.go"
	fileSMD           = "internal/driver/components/smd.go"
	fileOwnerResolver = "internal/driver/owner_resolver.go"
	fileService       = "internal/driver/service.go"
	fileTypes         = "api/v1alpha1/rblndriver_types.go"
	fileConsts        = "internal/consts/consts.go"
	fileImageRef      = "internal/utils/k8s/common.go"
	fileController    = "internal/controller/rblndriver_controller.go"
	fileUpgrade       = "internal/upgrade/consts.go"

	commitNodePool      = "f270da1f"
	commitDaemonSet     = "856f242a"
	commitDriverManager = "97275637"
	commitSMD           = "f270da1f"
	commitOwnerResolver = "f270da1f"
	commitService       = "8e4d346c"
	commitTypes         = "f270da1f"
	commitImageRef      = "2d7b8c3a"
	commitController    = "f270da1f"
	commitUpgrade       = "a48fb911"
)

var rules = []Rule{
	{"scope", "Only nodes labelled rebellions.ai/npu.deploy.driver=true are routed; a node that leaves that scope has its owner label removed.", fileOwnerResolver, commitOwnerResolver},
	{"participation", "RBLNDrivers being deleted, with a reserved key in their nodeSelector, or with a name over 63 characters take no part in routing; every other RBLNDriver does.", fileOwnerResolver, commitOwnerResolver},
	{"owner", "A node's owner is the matching RBLNDriver whose selector is a strict superset of every other matching one; a tie keeps the current owner if it matches, else leaves the node unowned.", fileOwnerResolver, commitOwnerResolver},
	{"pool-nfd", "A node without the NFD OS ID, VERSION_ID or kernel-version.full label joins no pool (the operator logs \"Is NFD installed?\").", fileNodePool, commitNodePool},
	{"pool-kernel", "The pool name's kernel is the NFD kernel with x86_64/aarch64 (and _64k) removed, '_' turned into '.', one trailing '.' trimmed, lowercased.", fileNodePool, commitNodePool},
	{"pool-family", "The family label is trimmed of spaces; a family that is absent, not a DNS-1123 label, or that makes the pool name longer than 63 characters puts the node in no pool (DriverFamilyLabelMissing).", fileNodePool, commitNodePool},
	{"pool-name", "The pool is <family>-<ID><VERSION_ID>-<kernel'>, and the first node by name that composes a pool name defines the pool's labels.", fileNodePool, commitNodePool},
	{"pool-rds", "With the RBLNClusterPolicy's spec.rds.enabled, nodes labelled rebellions.ai/rds.present=true form their own <pool>-rds pools (the name limit drops to 59) and every other pool keeps off them by node affinity.", fileNodePool, commitNodePool},
	{"pool-selector", "A driver DaemonSet's pods select rebellions.ai/npu.deploy.driver=true, the owner label, the three raw NFD labels and the family (and rds.present on an -rds pool).", fileDriverManager, commitDriverManager},
	{"daemonset", "A driver DaemonSet is named <CR>-<pool>, labelled (and selecting) app.kubernetes.io/name=rbln-npu-operator, app.kubernetes.io/component=rbln-driver, rebellions.ai/driver-node-pool and rebellions.ai/driver-instance, updated OnDelete.", fileDaemonSet, commitDaemonSet},
	{"daemonset-collision", "The operator refuses to adopt a DaemonSet of its name labelled for another RBLNDriver (\"name collision\").", fileDaemonSet, commitDaemonSet},
	{"containers", "A driver pod has the init container k8s-driver-manager and the container rbln-driver-container; the driver's pull policy is spec.imagePullPolicy (IfNotPresent when empty), Always for version latest.", filePodSpec, commitDaemonSet},
	{"image", "The driver image is <registry>/<image with the family before its last segment>:<version>-<kernel>-<ID><VERSION_ID>, from the trimmed spec fields and the raw kernel.", fileTypes, commitTypes},
	{"image-digest", "A digest in spec.image (@sha256:) or spec.version (sha256:) is refused: no driver image can be composed from it.", fileTypes, commitTypes},
	{"image-reference", "The manager and RSMD images are <registry without trailing '/'>/<image without leading '/'>:<tag>, the tag latest when empty.", fileImageRef, commitImageRef},
	{"smd", "The RSMD DaemonSet is <CR>-smd (component rbln-smd), its pods select npu.deploy.driver=true, the owner label and rebellions.ai/npu.deploy.rbln-smd=true, its container rbln-smd runs <smd.registry>/<smd.image>:<spec.version>.", fileSMD, commitSMD},
	{"smd-after-driver", "The RSMD DaemonSet exists only while a driver DaemonSet of the RBLNDriver exists; an empty spec.version leaves it as it is.", fileService, commitService},
	{"cluster-policy", "The operator reads the oldest RBLNClusterPolicy whose status.state is not ignored (the smaller name on a tie); without one it reconciles no RBLNDriver (MissingClusterPolicy).", fileService, commitService},
	{"upgrade-skip", "A node labelled rebellions.ai/npu-driver-upgrade.skip=true is left out of driver rollouts and keeps its current driver.", fileUpgrade, commitUpgrade},
	{"labels", "The label keys the operator reads and writes (owner, deploy gate, family, NFD, rds.present, rbln-smd gate) and its condition reasons.", fileConsts, commitController},
	{"conditions", "Condition reasons on an RBLNDriver: InvalidSpec, DriverFamilyLabelMissing, DriverImageNotFound, ConflictingNodeSelector, MissingClusterPolicy.", fileController, commitController},
	{"constants", "The component's names: rbln-driver, rbln-smd, the containers, the -rds suffix and the last-applied-hash annotation.", fileComponents, commitDaemonSet},
}

// Rules are the operator behaviours this package models, each with the file and commit it was
// read from. The slice is a copy.
func Rules() []Rule { return append([]Rule(nil), rules...) }
