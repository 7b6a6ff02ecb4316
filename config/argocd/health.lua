-- Argo CD health check for Tollgate's kinds: guardrails.tollgate.dev GuardrailPolicy,
-- ClusterGuardrailPolicy and AgentPassport (argocd-cm:
-- resource.customizations.health.guardrails.tollgate.dev_<Kind>, this one script for each).
-- Reads the conditions Tollgate's controllers write: Valid, Ready, Suspended, Reconciling, Stalled.
--   Valid=False (compile errors; the last good generation stays enforced) -> Degraded
--   Ready=False or Stalled=True (expired or invalid passport, duplicate
--     agent id, bundle rejected or not written)                          -> Degraded
--   Suspended=True (the kill switch, or revoked)                          -> Suspended
--   Ready=True                                                            -> Healthy
--   otherwise (not yet observed, reconciling)                             -> Progressing
local hs = {}

local function condition(conditions, type)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

local function describe(c)
  if c.message ~= nil and c.message ~= "" then
    return c.reason .. ": " .. c.message
  end
  return c.reason
end

if obj.status == nil or obj.status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for Tollgate to report the " .. (obj.kind or "object") .. "'s status"
  return hs
end

local generation = obj.metadata.generation or 0
local observed = obj.status.observedGeneration or 0
if observed < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for Tollgate to observe generation " .. generation
  return hs
end

local conditions = obj.status.conditions
local valid = condition(conditions, "Valid")
local ready = condition(conditions, "Ready")
local suspended = condition(conditions, "Suspended")
local stalled = condition(conditions, "Stalled")

if valid ~= nil and valid.status == "False" then
  hs.status = "Degraded"
  hs.message = describe(valid)
  return hs
end
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = describe(stalled)
  return hs
end
if ready ~= nil and ready.status == "False" then
  hs.status = "Degraded"
  hs.message = describe(ready)
  return hs
end
if suspended ~= nil and suspended.status == "True" then
  hs.status = "Suspended"
  hs.message = describe(suspended)
  return hs
end
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = describe(ready)
  return hs
end

hs.status = "Progressing"
if ready ~= nil then
  hs.message = describe(ready)
else
  hs.message = "Waiting for the Ready condition"
end
return hs
