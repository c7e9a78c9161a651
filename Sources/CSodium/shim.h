#ifndef PEERLOG_CSODIUM_SHIM_H
#define PEERLOG_CSODIUM_SHIM_H
#include <sodium.h>
#endif
