// The Java the server runs on, from its JVM's runtime bean (a server may refuse the procedure:
// the caller then reports the Java as unknown).
CALL dbms.queryJmx("java.lang:type=Runtime") YIELD attributes
RETURN attributes.VmVersion.value AS vm_version, attributes.SpecVersion.value AS spec_version;
