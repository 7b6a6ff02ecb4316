package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Budget caps the sum of a numeric argument of matching tool calls per passport (or thread) and
// period, e.g. the `amount` of payment calls per passport per day (the OAP packs' daily caps). A
// call whose idempotency key (its call_id, or an argument) was already counted is not counted
// again.
type Budget struct {
	// Name identifies the budget (policy_id#name in decisions).
	Name string `json:"name"`
	// Tools are tool-name globs; empty means every tool.
	Tools []string `json:"tools,omitempty"`
	// Field is the dotted path of the summed argument in the tool input, e.g. amount. Its value
	// must be a non-negative integer (minor units, e.g. cents).
	Field string `json:"field"`
	// Max is the cap of the sum per period (used when LimitKey is empty or the passport lacks it).
	Max int64 `json:"max,omitempty"`
	// LimitKey names the passport limit holding the cap, in the limits of the tool's capability,
	// e.g. max_amount_per_day; the passport's value overrides Max.
	LimitKey string `json:"limitKey,omitempty"`
	// Period is a Go duration: the sums reset at multiples of it from the Unix epoch (default 24h,
	// a UTC day).
	Period string `json:"period,omitempty"`
	// Per is Passport (default) or Thread.
	Per string `json:"per,omitempty"`
	// IdempotencyField is the dotted path of the argument holding the call's idempotency key;
	// empty means the request's call_id.
	IdempotencyField string `json:"idempotencyField,omitempty"`
}

// Budget defaults and reason codes.
const (
	// DefaultBudgetPeriod is a budget's period when empty: a UTC day.
	DefaultBudgetPeriod = 24 * time.Hour
	// DefaultBudgetPer is a budget's per when empty.
	DefaultBudgetPer = PerPassport
	// CodeIdempotencyConflict denies a call whose idempotency key was already counted with another
	// amount.
	CodeIdempotencyConflict = "oap.idempotency_conflict"
	// maxCounterSubject is the longest thread id or idempotency key used verbatim in a counter key;
	// longer ones are hashed.
	maxCounterSubject = 128
)

// cBudget is a compiled budget.
type cBudget struct {
	name        string
	ref         string
	key         string // namespace/policy/budget: the counter key, stable across snapshots
	keyNoThread string
	tools       toolSet
	field       []string
	idemField   []string // nil: the request's call_id
	max         int64    // 0: none (limitKey required)
	limitKey    string
	period      time.Duration
	thread      bool
}

// compileBudgets reads the budgets; counters are keyed by namespace, policy and budget.
func (cp *cPolicy) compileBudgets(e *errs, namespace, name string, spec PolicySpec) {
	seen := map[string]bool{}
	for i, b := range spec.Budgets {
		base := fmt.Sprintf("spec.budgets[%d]", i)
		validateName(e, base+".name", b.Name, seen)
		validateTools(e, base+".tools", b.Tools, false)
		if b.Field == "" {
			e.required(base + ".field")
		} else {
			e.pattern(base+".field", b.Field, reFieldPath, 256)
		}
		switch {
		case b.Max < 0 || b.Max > MaxBudgetAmount:
			e.add(base+".max", "must be between 1 and %d", int64(MaxBudgetAmount))
		case b.Max == 0 && b.LimitKey == "":
			e.add(base+".max", "max or limitKey is required")
		}
		if b.LimitKey != "" {
			e.pattern(base+".limitKey", b.LimitKey, reRuleName, 63)
		}
		period := DefaultBudgetPeriod
		if b.Period != "" {
			d, err := parsePositiveDuration(b.Period)
			switch {
			case err != nil:
				e.add(base+".period", "%v", err)
			case d < time.Second:
				e.add(base+".period", "must be at least 1s")
			default:
				period = d
			}
		}
		thread := false
		switch b.Per {
		case "", PerPassport:
		case PerThread:
			thread = true
		default:
			e.enum(base+".per", b.Per, []string{PerPassport, PerThread})
		}
		var idem []string
		if b.IdempotencyField != "" {
			e.pattern(base+".idempotencyField", b.IdempotencyField, reFieldPath, 256)
			idem = strings.Split(b.IdempotencyField, ".")
		}
		key := namespace + "/" + name + "/" + b.Name
		cp.budgets = append(cp.budgets, cBudget{name: b.Name, ref: cp.id + "#" + b.Name,
			key: key, keyNoThread: key + "\x00no-thread", tools: compileToolSet(b.Tools, true),
			field: strings.Split(b.Field, "."), idemField: idem, max: b.Max, limitKey: b.LimitKey,
			period: period, thread: thread})
	}
}

// lookupPath returns the value at a dotted path of input.
func lookupPath(input map[string]any, path []string) (any, bool) {
	var v any = input
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[p]; !ok {
			return nil, false
		}
	}
	return v, true
}

// amountOf reads a budget amount: a non-negative integer no larger than MaxBudgetAmount.
func amountOf(v any) (int64, bool) {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case float32:
		f = float64(n)
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	case int32:
		f = float64(n)
	case uint64:
		if n > MaxBudgetAmount {
			return 0, false
		}
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		if err != nil {
			return 0, false
		}
		f = float64(i)
	default:
		return 0, false
	}
	if math.IsNaN(f) || f < 0 || f > MaxBudgetAmount || f != math.Trunc(f) {
		return 0, false
	}
	return int64(f), true
}

// capOf returns a budget's cap for a call: the passport's limitKey for the tool's capability when
// set, else max. ok is false when neither gives one.
func (b *cBudget) capOf(limits map[string]any) (int64, bool) {
	if b.limitKey != "" {
		if v, found := limits[b.limitKey]; found {
			return amountOf(v)
		}
	}
	return b.max, b.max > 0
}

// idempotencyKeyOf returns the call's idempotency key for b ("" when it has none).
func (b *cBudget) idempotencyKeyOf(req *Request, input map[string]any) string {
	if b.idemField == nil {
		return counterSubject(req.CallID)
	}
	v, ok := lookupPath(input, b.idemField)
	if !ok {
		return ""
	}
	switch k := v.(type) {
	case string:
		return counterSubject(k)
	case float64:
		return strconv.FormatFloat(k, 'g', -1, 64)
	case json.Number:
		return k.String()
	}
	return ""
}
