// A new password for the managed instance's user, run against the system database while
// authentication is off (kbgraph server reset-password). The password is a parameter.
ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED;
