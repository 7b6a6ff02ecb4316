package policy

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/tollgate-dev/tollgate/internal/policy/paths"
	"github.com/tollgate-dev/tollgate/internal/policy/shell"
)

// varCall is the CEL variable holding what the guard read from the call's arguments: paths
// (canonical), urls and command, whatever the fields were called.
const varCall = "call"

// guardCELOptions are the environment options that expose the guard's analysis to CEL: the
// Kubernetes url(), ip() and cidr() libraries, shell.commands(), the path.* functions and the call
// variable.
func guardCELOptions() []cel.EnvOption {
	listOfMaps := cel.ListType(cel.MapType(cel.StringType, cel.DynType))
	return []cel.EnvOption{
		library.URLs(), library.IP(), library.CIDR(),
		cel.Variable(varCall, cel.MapType(cel.StringType, cel.DynType)),
		cel.Function("shell.commands",
			cel.Overload("shell_commands_string", []*cel.Type{cel.StringType}, listOfMaps,
				cel.UnaryBinding(celShellCommands))),
		cel.Function("path.canonical",
			cel.Overload("path_canonical_string", []*cel.Type{cel.StringType}, cel.StringType,
				cel.UnaryBinding(func(v ref.Val) ref.Val {
					c, err := paths.Canonical(string(v.(types.String)))
					if err != nil {
						return types.NewErrFromString("path.canonical: " + err.Error())
					}
					return types.String(c)
				}))),
		cel.Function("path.sensitiveRead",
			cel.Overload("path_sensitive_read_string", []*cel.Type{cel.StringType}, cel.BoolType,
				cel.UnaryBinding(func(v ref.Val) ref.Val { return celSensitive(v, paths.BaselineRead()) }))),
		cel.Function("path.sensitiveWrite",
			cel.Overload("path_sensitive_write_string", []*cel.Type{cel.StringType}, cel.BoolType,
				cel.UnaryBinding(func(v ref.Val) ref.Val { return celSensitive(v, paths.BaselineWrite()) }))),
		cel.Function("path.matches",
			cel.Overload("path_matches_string_string", []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType,
				cel.BinaryBinding(func(p, g ref.Val) ref.Val {
					c, err := paths.Canonical(string(p.(types.String)))
					if err != nil {
						return types.NewErrFromString("path.matches: " + err.Error())
					}
					pat, err := paths.CompilePattern(string(g.(types.String)))
					if err != nil {
						return types.NewErrFromString("path.matches: " + err.Error())
					}
					return types.Bool(pat.Match(c))
				}))),
	}
}

func celSensitive(v ref.Val, set *paths.Set) ref.Val {
	c, err := paths.Canonical(string(v.(types.String)))
	if err != nil {
		return types.NewErrFromString("path: " + err.Error())
	}
	_, ok := set.Match(c)
	return types.Bool(ok)
}

// celShellCommands is shell.commands(string): every simple command the string would run, as maps
// with name, program, dynamic, args, flags, positionals, redirects ({op, target, write}),
// wrappers, via and code ("" when none). A string that cannot be analysed is an evaluation error
// (which fails closed unless the policy's failurePolicy is Open).
func celShellCommands(v ref.Val) ref.Val {
	script, err := shell.Analyze(string(v.(types.String)), shellLimits)
	if err != nil {
		return types.NewErrFromString("shell.commands: " + err.Error())
	}
	return commandsValue(script)
}
