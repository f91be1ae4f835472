// Connectivity and credential check.
RETURN 1 AS ok;
