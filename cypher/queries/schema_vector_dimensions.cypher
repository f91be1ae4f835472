// Dimensions of the named vector indexes. $names
SHOW VECTOR INDEXES
YIELD name, options
WHERE name IN $names
RETURN name, options.indexConfig.`vector.dimensions` AS dimensions;
