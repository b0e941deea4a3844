/*
 * test/install_probe.c: must NOT link. It calls an internal function (vmt__*, hidden in the
 * library); test/install_test.sh expects the link against the installed shared and static
 * libraries to fail, which shows that internals are not part of what a host can reach.
 */
void vmt__fault_disarm_all(void);

int main(void) {
  vmt__fault_disarm_all();
  return 0;
}
