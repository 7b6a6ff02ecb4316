package policy

import (
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/tollgate-dev/tollgate/internal/policy/shell"
)

// celKeyName is the key of a command's program name in shell.commands() and call.commands.
const celKeyName = "name"

// commandFieldNames are the keys of one command in shell.commands() and call.commands.
var commandFieldNames = []string{celKeyName, "program", "dynamic", "args", "flags", "positionals", "redirects", "wrappers", "via", "code"}

// commandsValue is the CEL list of a script's commands. Each command is a map whose fields are
// converted when an expression reads them, so `c.name == 'rm'` does not build every argument list.
func commandsValue(script *shell.Script) ref.Val {
	vals := make([]ref.Val, len(script.Commands))
	cvs := make([]commandVal, len(script.Commands))
	for i := range script.Commands {
		cvs[i] = commandVal{c: &script.Commands[i]}
		vals[i] = &cvs[i]
	}
	return types.NewRefValList(types.DefaultTypeAdapter, vals)
}

// commandVal is one analysed command as a read-only CEL map (see commandFieldNames).
type commandVal struct {
	c *shell.Command
}

var (
	_ traits.Mapper = (*commandVal)(nil)
	_ ref.Val       = (*commandVal)(nil)
)

// field returns the CEL value of one key.
func (v *commandVal) field(key string) (ref.Val, bool) {
	c := v.c
	switch key {
	case celKeyName:
		return types.String(c.Name), true
	case "program":
		return types.String(c.Program), true
	case "dynamic":
		return types.Bool(c.Dynamic), true
	case "args":
		return wordList(c.Args), true
	case "flags":
		return types.NewStringList(types.DefaultTypeAdapter, c.Flags), true
	case "positionals":
		return wordList(c.Positionals), true
	case "redirects":
		redirects := make([]any, 0, len(c.Redirects))
		for _, r := range c.Redirects {
			redirects = append(redirects, map[string]any{"op": r.Op, "target": r.Target.Value, verbWrite: r.Write})
		}
		return types.DefaultTypeAdapter.NativeToValue(redirects), true
	case "wrappers":
		return types.NewStringList(types.DefaultTypeAdapter, c.Wrappers), true
	case "via":
		return types.String(c.Via), true
	case "code":
		if c.Code == shell.CodeNone {
			return types.String(""), true
		}
		return types.String(c.Code.String()), true
	}
	return nil, false
}

func wordList(ws []shell.Word) ref.Val {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Value
	}
	return types.NewStringList(types.DefaultTypeAdapter, out)
}

// native is the command as a plain Go map (for conversions and equality).
func (v *commandVal) native() ref.Val {
	m := make(map[ref.Val]ref.Val, len(commandFieldNames))
	for _, k := range commandFieldNames {
		f, _ := v.field(k)
		m[types.String(k)] = f
	}
	return types.NewRefValMap(types.DefaultTypeAdapter, m)
}

// Find implements traits.Mapper.
func (v *commandVal) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	return v.field(string(k))
}

// Get implements traits.Indexer.
func (v *commandVal) Get(key ref.Val) ref.Val {
	if f, ok := v.Find(key); ok {
		return f
	}
	return types.NewErr("no such key: %v", key)
}

// Contains implements traits.Container.
func (v *commandVal) Contains(key ref.Val) ref.Val {
	_, ok := v.Find(key)
	return types.Bool(ok)
}

// Iterator implements traits.Iterable (over the keys).
func (v *commandVal) Iterator() traits.Iterator {
	return types.NewStringList(types.DefaultTypeAdapter, commandFieldNames).Iterator()
}

// Size implements traits.Sizer.
func (v *commandVal) Size() ref.Val { return types.Int(len(commandFieldNames)) }

// ConvertToNative implements ref.Val.
func (v *commandVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return v.native().ConvertToNative(typeDesc)
}

// ConvertToType implements ref.Val.
func (v *commandVal) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return v
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from map to '%s'", t)
}

// Equal implements ref.Val.
func (v *commandVal) Equal(other ref.Val) ref.Val { return v.native().Equal(other) }

// Type implements ref.Val.
func (v *commandVal) Type() ref.Type { return types.MapType }

// Value implements ref.Val.
func (v *commandVal) Value() any { return v.native().Value() }
