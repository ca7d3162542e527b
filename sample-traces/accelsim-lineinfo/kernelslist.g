MemcpyHtoD,0x00007f3a00000000,8192
kernel-1.traceg
