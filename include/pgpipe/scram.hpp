// The SCRAM-SHA-256 toolkit (OpenSSL, libidn; needs no driver):
//  - verifier.hpp  make, parse and check PostgreSQL verifiers
//  - saslprep.hpp  PostgreSQL's password normalisation
//  - client.hpp    client side of a SCRAM exchange, channel binding
//  - probe.hpp     ask a server how it authenticates, and try a password
//  - base64.hpp, errors.hpp
#pragma once

#include <pgpipe/scram/base64.hpp>
#include <pgpipe/scram/client.hpp>
#include <pgpipe/scram/errors.hpp>
#include <pgpipe/scram/probe.hpp>
#include <pgpipe/scram/saslprep.hpp>
#include <pgpipe/scram/verifier.hpp>
