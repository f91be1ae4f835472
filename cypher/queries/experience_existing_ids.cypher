// Which of $ids exist in namespace $kb.
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
RETURN collect(e.id) AS ids;
