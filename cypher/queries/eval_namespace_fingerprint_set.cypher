// Stamps namespace $kb, just built by the evaluation, with $fingerprint (JSON text: what it was
// built from and what it holds), checked before the namespace is used again.
MERGE (s:KbState {kb: $kb})
SET s.eval_fingerprint = $fingerprint
RETURN s.eval_fingerprint AS fingerprint;
