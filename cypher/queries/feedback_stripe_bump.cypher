// A write that changes what feedback changes in namespace $kb (quality, usage impact, last use, the
// task outcomes) gives one of its feedback stripes, $stripe, a new token, in the write's own
// transaction and before it locks anything else (kbgraph.store.search_version): a search reuses
// what it kept of those values only while every stripe it reads holds the token it read then.
// A token, never a count: a namespace deleted and written again never repeats one.
MERGE (s:FeedbackStripe {kb: $kb, stripe: $stripe})
SET s.version = randomUUID()
RETURN s.version AS version;
