-- wrk script: POST /v1/plans with a unique Idempotency-Key per request.
local counter = 0
local prefix = ""
function init(args)
  -- a per-thread prefix: every request gets its own key, so none is a replay
  prefix = tostring({}):gsub("table: ", "") .. "-" .. tostring(os.time())
end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("AGENT")
wrk.body = '{"cluster_id":"bench","conversation_id":"c1","visibility":"shared","tool":"apply_manifest",' ..
  '"command":"kubectl -n web scale deploy api --replicas=3",' ..
  '"resources":[{"group":"apps","kind":"Deployment","namespace":"web","name":"api"}],' ..
  '"payload":{"argocd":{"level":"self_heal","applications":[{"name":"web","self_heal":true}]}}}'
request = function()
  counter = counter + 1
  wrk.headers["Idempotency-Key"] = "load-" .. prefix .. "-" .. counter
  return wrk.format()
end
