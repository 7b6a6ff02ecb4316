package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// argoHealth is what an Argo CD health script returns.
type argoHealth struct {
	Status  string
	Message string
}

// argoStatuses are the health codes Argo CD accepts from a script (anything else becomes Unknown).
var argoStatuses = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true,
}

// healthScript reads config/argocd/health.lua, the one script of every kind.
func healthScript(root string) (string, error) {
	p := filepath.Join(root, "config", "argocd", "health.lua")
	data, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("reading the health script: %w", err)
	}
	return string(data), nil
}

// runHealthScript runs an Argo CD health script on obj the way Argo CD does (util/lua): a fresh
// gopher-lua state with only the package, base and table libraries, a one-second deadline, the object
// as the global obj (maps as tables, lists as arrays, numbers as numbers), and a table returned
// with status and message.
func runHealthScript(script string, obj map[string]any) (argoHealth, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), Protect: true}, lua.LString(lib.name)); err != nil {
			return argoHealth{}, fmt.Errorf("opening Lua library %s: %w", lib.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", luaValue(l, obj))
	if err := l.DoString(script); err != nil {
		return argoHealth{}, fmt.Errorf("running the health script: %w", err)
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return argoHealth{}, fmt.Errorf("the health script returned %s, want a table", l.Get(-1).Type())
	}
	h := argoHealth{Status: lua.LVAsString(ret.RawGetString("status")), Message: lua.LVAsString(ret.RawGetString("message"))}
	if !argoStatuses[h.Status] {
		return h, fmt.Errorf("the health script returned status %q, which Argo CD reads as Unknown", h.Status)
	}
	return h, nil
}

// luaValue converts a JSON-shaped Go value into Lua as Argo CD's decodeValue does.
func luaValue(l *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case bool:
		return lua.LBool(x)
	case string:
		return lua.LString(x)
	case float64:
		return lua.LNumber(x)
	case int64:
		return lua.LNumber(x)
	case int:
		return lua.LNumber(x)
	case []any:
		t := l.CreateTable(len(x), 0)
		for _, item := range x {
			t.Append(luaValue(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(x))
		for k, item := range x {
			t.RawSetH(lua.LString(k), luaValue(l, item))
		}
		return t
	default:
		return lua.LNil
	}
}
