package v1alpha1

// Labels and annotations.
const (
	// AnnotationPassport on a pod names the AgentPassport (in the pod's namespace) the pod presents.
	AnnotationPassport = "tollgate.dev/passport"
	// AnnotationContainers on a pod lists (comma-separated) the containers to wire; default all.
	AnnotationContainers = "tollgate.dev/containers"
	// LabelGuarded marks a pod the injector wired to a decision endpoint.
	LabelGuarded = "tollgate.dev/guarded"
	// LabelBundleNamespace on a bundle ConfigMap names the namespace whose objects it holds.
	LabelBundleNamespace = "tollgate.dev/bundle-namespace"
	// LabelBundle marks ConfigMaps that hold compiled bundles.
	LabelBundle = "tollgate.dev/bundle"
	// AnnotationLiftAutoSuspend on an AgentPassport lifts its automatic suspension when set to a new
	// value (e.g. the current time).
	AnnotationLiftAutoSuspend = "tollgate.dev/lift-auto-suspend"
)
