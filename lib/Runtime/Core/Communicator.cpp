//===- Communicator.cpp - The processes of a multi-process job ------------===//

#include "heterps/Runtime/Communicator.h"

using namespace heterps::runtime;

Communicator::~Communicator() = default;
