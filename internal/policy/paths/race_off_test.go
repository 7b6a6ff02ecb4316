//go:build !race

package paths

// timeScale stretches the time limits of the boundedness tests under the race detector.
const timeScale = 1
