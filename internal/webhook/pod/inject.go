// Package pod is the opt-in injector: a mutating admission webhook that wires pods annotated
// tollgate.dev/passport: <name> to a Tollgate decision endpoint (endpoint URL, passport reference and
// a projected ServiceAccount token for audience tollgate), after checking that the pod may present
// that passport.
package pod

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// What the injector adds to a pod.
const (
	// EnvURL is the decision endpoint's base URL.
	EnvURL = "TOLLGATE_URL"
	// EnvPassport is the passport reference, namespace/name.
	EnvPassport = "TOLLGATE_PASSPORT"
	// EnvTokenFile is the path of the projected ServiceAccount token the agent presents as bearer.
	EnvTokenFile = "TOLLGATE_TOKEN_FILE"
	// VolumeName is the name of the projected token volume.
	VolumeName = "tollgate-token"
	// TokenMountPath is where the token volume is mounted (read-only).
	TokenMountPath = "/var/run/secrets/tollgate.dev/serviceaccount"
	// TokenFile is the token's file name inside the volume.
	TokenFile = "token"
	// Audience is the audience of the projected token, checked by the decision endpoint.
	Audience = "tollgate"
	// DefaultServiceAccount is the service account of a pod that names none.
	DefaultServiceAccount = "default"
)

// wiring is what inject writes into a pod.
type wiring struct {
	url               string
	passport          string // namespace/name
	expirationSeconds int64
}

// targetContainers returns the containers to wire: those named by tollgate.dev/containers
// (regular or init containers), else every regular container.
func targetContainers(pod *corev1.Pod) ([]*corev1.Container, error) {
	raw, ok := pod.Annotations[guardrailsv1alpha1.AnnotationContainers]
	if !ok {
		out := make([]*corev1.Container, 0, len(pod.Spec.Containers))
		for i := range pod.Spec.Containers {
			out = append(out, &pod.Spec.Containers[i])
		}
		return out, nil
	}
	var out []*corev1.Container
	var unknown []string
	for name := range strings.SplitSeq(raw, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		c := findContainer(pod, name)
		if c == nil {
			unknown = append(unknown, name)
			continue
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("annotation %s names no container of the pod: %s", guardrailsv1alpha1.AnnotationContainers, strings.Join(unknown, ", "))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("annotation %s is empty; list container names separated by commas, or remove it to wire every container",
			guardrailsv1alpha1.AnnotationContainers)
	}
	return out, nil
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// inject wires pod to the decision endpoint in place. It only ever adds: an env var, volume or
// mount the pod already has (by name, or a mount at the same path) is left as the user set it, so
// applying inject to its own output changes nothing. An empty serviceAccountName becomes "default".
func inject(pod *corev1.Pod, w wiring) error {
	targets, err := targetContainers(pod)
	if err != nil {
		return err
	}
	if pod.Spec.ServiceAccountName == "" && pod.Spec.DeprecatedServiceAccount == "" {
		// A projected token needs a named service account. The ServiceAccount admission plugin sets
		// the same value before mutating webhooks run in a standard cluster; doing it here too keeps
		// the pod valid where that plugin is off.
		pod.Spec.ServiceAccountName = DefaultServiceAccount
	}
	if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == VolumeName }) {
		pod.Spec.Volumes = append(pod.Spec.Volumes, tokenVolume(w.expirationSeconds))
	}
	for _, c := range targets {
		tokenDir := TokenMountPath
		if i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == VolumeName }); i >= 0 {
			tokenDir = c.VolumeMounts[i].MountPath // the user mounted our volume elsewhere: point at it
		} else if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == TokenMountPath }) {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: VolumeName, MountPath: TokenMountPath, ReadOnly: true})
		}
		addEnv(c, EnvURL, w.url)
		addEnv(c, EnvPassport, w.passport)
		addEnv(c, EnvTokenFile, path.Join(tokenDir, TokenFile))
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[guardrailsv1alpha1.LabelGuarded] = "true"
	return nil
}

func addEnv(c *corev1.Container, name, value string) {
	if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name }) {
		return
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}

func tokenVolume(expirationSeconds int64) corev1.Volume {
	return corev1.Volume{
		Name: VolumeName,
		VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience:          Audience,
				ExpirationSeconds: &expirationSeconds,
				Path:              TokenFile,
			}}},
		}},
	}
}
