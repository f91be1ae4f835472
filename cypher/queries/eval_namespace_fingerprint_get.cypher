// The fingerprint stamped on namespace $kb when the evaluation built it (null: none stamped).
OPTIONAL MATCH (s:KbState {kb: $kb})
RETURN s.eval_fingerprint AS fingerprint;
