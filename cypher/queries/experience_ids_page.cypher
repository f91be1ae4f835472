// A page of experience ids in namespace $kb, in id order (for exports and scans).
// $kb; $after: last id of the previous page ('' for the first); $limit
MATCH (e:Experience {kb: $kb})
WHERE e.id > $after
RETURN e.id AS id
ORDER BY id
LIMIT $limit;
