// Feedback: counts one use of each experience in $ids (namespace $kb) and, when the task's
// $outcome in [0, 1] is known, one success (outcome >= 0.5), the quality EMA of Agent KB D.1
// (Q <- (1 - $rate)·Q + $rate·outcome) and the usage-impact sum of D.3 (decayed at $decay per day
// since it was last brought up to date, plus $impact·(2·outcome - 1)). last_used_at only moves
// forward. The first SET takes the node's write lock before anything is read (no lost updates).
// $now: the event's time.
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
SET e._lock = true
WITH e, CASE WHEN e.usage_impact_at IS NULL THEN 0.0
  ELSE duration.inSeconds(e.usage_impact_at, $now).seconds / 86400.0 END AS days
SET e.used = coalesce(e.used, 0) + 1,
    e.succeeded = coalesce(e.succeeded, 0) + CASE WHEN $outcome >= 0.5 THEN 1 ELSE 0 END,
    e.quality = CASE WHEN $outcome IS NULL THEN e.quality
      ELSE (1 - $rate) * coalesce(e.quality, 0.5) + $rate * $outcome END,
    e.usage_impact = CASE WHEN $outcome IS NULL THEN e.usage_impact
      ELSE coalesce(e.usage_impact, 0.0) * exp(-$decay * CASE WHEN days > 0 THEN days ELSE 0.0 END)
        + $impact * (2 * $outcome - 1) END,
    e.usage_impact_at = CASE WHEN $outcome IS NULL THEN e.usage_impact_at ELSE $now END,
    e.last_used_at = CASE WHEN e.last_used_at IS NULL OR e.last_used_at < $now THEN $now ELSE e.last_used_at END
REMOVE e._lock
RETURN e.id AS id;
