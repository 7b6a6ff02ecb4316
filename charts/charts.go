// Package charts embeds Tollgate's Helm charts, so that they can be rendered (internal/chartrender)
// without the source tree.
package charts

import "embed"

// FS holds the chart directory tollgate/ (Chart.yaml, values.yaml, values.schema.json, crds/,
// templates/ and files/), dotfiles included.
//
//go:embed all:tollgate
var FS embed.FS

// TollgateDir is the Tollgate chart's directory in FS.
const TollgateDir = "tollgate"
