#include "CLongLinkPrefetch.h"
