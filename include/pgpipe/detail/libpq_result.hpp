// The part of libpq's interface that pgpipe's public headers read results
// with (result.hpp, typed_rows.hpp), declared here so that a program using
// pgpipe does not compile all of <libpq-fe.h> with every file.
//
// Each declaration is libpq's own, spelled as <libpq-fe.h> and
// <postgres_ext.h> spell it (unchanged from libpq 9 through 18): a file that
// includes both sees one function, and a mismatch would be a compile error
// in pgpipe's own build, whose sources include both. A program that calls
// other libpq functions on result::native_handle() includes <libpq-fe.h>.
#pragma once

extern "C" {
typedef unsigned int Oid;
typedef struct pg_result PGresult;

int PQntuples(const PGresult* res);
int PQnfields(const PGresult* res);
char* PQfname(const PGresult* res, int field_num);
int PQfnumber(const PGresult* res, const char* field_name);
int PQfformat(const PGresult* res, int field_num);
Oid PQftype(const PGresult* res, int field_num);
char* PQcmdStatus(PGresult* res);
char* PQcmdTuples(PGresult* res);
char* PQgetvalue(const PGresult* res, int tup_num, int field_num);
int PQgetlength(const PGresult* res, int tup_num, int field_num);
int PQgetisnull(const PGresult* res, int tup_num, int field_num);
void PQclear(PGresult* res);
}
