// Package policy is Tollgate's policy engine: it compiles a namespace's passports and policies (a
// Bundle) into an immutable Snapshot and decides AI agents' tool calls against it.
//
// The package is pure Go: it imports no Kubernetes client code, so the same engine runs in the
// admission webhook, the controller, the decision endpoint, the offline CLI and tests. Its spec
// structs have the CRDs' JSON field names, so json.Marshal of an API object's spec decodes into them.
//
// # Decisions (hook pre_tool_call)
//
//  1. Unknown passport → deny oap.passport_not_found. Status not active, or past expiresAt → deny
//     oap.passport_suspended.
//  2. The tool's capability: policies' toolCapabilities in priority order (globs allowed), then
//     system.command.execute for any tool whose input carries a command field (CommandFields), then
//     the built-in table of the tool names agent frameworks use. A capability the passport does not
//     hold → deny oap.unknown_capability; so is a tool that maps to no capability, unless the
//     passport's unmappedTools is Allow.
//  3. The passport's limits, on what the call will do (the guard, guard.go): a shell command is
//     analysed by package shell into every simple command it would run; blocked_patterns (commands
//     such as "rm -rf" or "curl | sh", and paths) → oap.blocked_pattern; path arguments and
//     redirections against blocked paths and the sensitive baseline (package paths) →
//     oap.blocked_pattern; URLs against the web.fetch limits and the default block of internal
//     addresses (package hosts); then allowed_commands for every command, wrappers included, dynamic
//     program names and inline interpreter code → oap.command_not_allowed. File tools' path fields
//     (PathFields) are canonical before allowed_paths / blocked_paths; max_file_bytes →
//     oap.limit_exceeded. What cannot be analysed → oap.invalid_context.
//  4. Every policy selecting the passport, by priority (higher first, then name): its requires must
//     hold (else deny with their code), then its first matching rule decides; no match → its external
//     evaluator, else its defaultAction. Any deny wins; modify results chain (the next policy sees the
//     modified input). Evaluation errors deny oap.evaluator_error unless failurePolicy is Open (then
//     the policy is skipped with a warning). DryRun policies only report in metadata.dry_run; Warn
//     policies report in metadata.warnings and never change the outcome.
//  5. Rate limits of the selecting policies count calls the policies let through; over the limit →
//     oap.rate_limit_exceeded.
//
// Input guards (guards.go, guards_compile.go) screen text entering the model's context with the
// policies' inputGuards: the built-in DefaultInputPatterns (exo's eight PatternBackend defaults
// first, each a HIGH prompt_injection risk) plus their own, blocking at or above blockThreshold
// (default HIGH). They screen at the hooks a policy names (default pre_llm_call and post_tool_call):
// pre_llm_call the latest user message, post_tool_call a tool's result (indirect prompt injection),
// pre_tool_call a tool call's arguments (before the policies' rules). Every such decision carries
// metadata.risk_assessment (exo's RiskAssessment); a blocking match is denied with oap.<riskType>
// (oap.prompt_injection for the built-in patterns). Screening is bounded (guard_scan.go): every
// pattern begins with literal text, which is searched for first, and runs only where that text and
// the text its match must contain occur, over at most MaxMatchBytes; patterns are bounded in
// program size and counted repetition at compile. A text over MaxScanBytes, or one not screened by
// the evaluation deadline, is denied by every enforcing policy with guards: screening fails closed,
// so a text crafted to be slow to screen is refused, never let through.
//
// Hook post_llm_call applies the policies' responseGuards, as DeerFlow's
// SafetyFinishReasonMiddleware does: when a response carries tool calls and a provider's safety
// termination detector fires (OpenAI-compatible finish_reason content_filter, Anthropic stop_reason
// refusal, Gemini finish_reason SAFETY, BLOCKLIST, PROHIBITED_CONTENT, SPII, RECITATION; each
// case-insensitive on its own field, extended or replaced per policy), the calls are suppressed:
// deny oap.response_blocked, naming the detector, the field, its value and the suppressed tools, never
// their arguments. A response without tool calls is allowed. Output patterns screen the response's
// text (content) like the input guards. Passports no policy selects get the built-in guards.
//
// # CEL
//
// Rule conditions (when), requirements (expression) and modify values are CEL over the variables
// tool (string), input (the tool arguments), passport (name, namespace, labels, agentID, owner,
// assuranceLevel, status, capabilities as a map id → params, limits, regions, serviceAccounts,
// expiresAt), limits (the passport's limits for the tool's capability) and request (tool_name,
// thread_id, call_id, is_subagent, hook, agent_id, passport, timestamp) and call (paths: the
// canonical paths of the path fields, urls, command). The functions shell.commands(string),
// path.canonical, path.sensitiveRead, path.sensitiveWrite and path.matches expose the guard's
// analysis, and the Kubernetes url(), ip() and cidr() libraries read addresses. Expressions are compiled
// once; when and expression must be bool (or dyn, checked at run time).
//
// Costs are bounded everywhere (cel.go, cel_cost.go). Each expression's cost is estimated, as the
// Kubernetes API server estimates CRD validation rules, against declared sizes of what it reads
// (request strings and lists up to DeclaredRequestBytes, call.paths and call.urls up to MaxCallPaths
// and MaxCallURLs, the passport as its CRD bounds it, shell.commands() as package shell bounds it);
// over MaxExpressionCost, or a policy over MaxPolicyCost, is a compile error with the field path and
// the estimate. Compile work is bounded before type checking: MaxExpressionBytes,
// MaxExpressionNodes and a type size per expression, and per policy and per bundle the length and
// the check work of the distinct expressions. At run time a decision's expressions share an
// evaluation deadline (WithEvalDeadline, default DefaultEvalDeadline): comprehensions are
// interrupted and no expression starts after it; loop-free expressions that may cost more than a
// quarter of MaxExpressionCost run under cel.CostLimit(MaxExpressionCost). Either is an evaluation
// error (see failurePolicy).
package policy
