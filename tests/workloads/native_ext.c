// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A C extension whose GIL transitions are known (tests/integration/natives.py): sleeper()
 * releases the GIL around a sleep, through Py_BEGIN_ALLOW_THREADS (PyEval_SaveThread and
 * PyEval_RestoreThread); start_holder() starts a C thread that takes the GIL through
 * PyGILState_Ensure, holds it for the given milliseconds without releasing it, and gives it back
 * with PyGILState_Release; join_holder() waits for it (the GIL released meanwhile). Built as C,
 * or as C++ (-DNATIVE_CXX), where the functions live in namespace gilns and their names are
 * mangled: the recording must show them demangled.
 */
#include <Python.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#ifdef NATIVE_CXX
namespace gilns {
#define EXTERN_C extern "C"
#else
#define EXTERN_C
#endif

static pthread_t holder;

static void busy_ms(long ms)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000L + (b.tv_nsec - a.tv_nsec) / 1000000L < ms);
}

__attribute__((noinline)) static void *holder_thread(void *arg)
{
	PyGILState_STATE st = PyGILState_Ensure();

	busy_ms((long)(intptr_t)arg); /* holding the GIL: the others wait */
	PyGILState_Release(st);
	return NULL;
}

__attribute__((noinline)) static PyObject *sleeper(PyObject *self, PyObject *arg)
{
	long ms = PyLong_AsLong(arg);

	Py_BEGIN_ALLOW_THREADS
	usleep((useconds_t)ms * 1000);
	Py_END_ALLOW_THREADS
	Py_RETURN_NONE;
}

static PyObject *start_holder(PyObject *self, PyObject *arg)
{
	long ms = PyLong_AsLong(arg);

	if (pthread_create(&holder, NULL, holder_thread, (void *)(intptr_t)ms))
		return PyErr_SetFromErrno(PyExc_OSError);
	Py_RETURN_NONE;
}

static PyObject *join_holder(PyObject *self, PyObject *unused)
{
	Py_BEGIN_ALLOW_THREADS
	pthread_join(holder, NULL);
	Py_END_ALLOW_THREADS
	Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
	{ "sleeper", sleeper, METH_O, NULL },
	{ "start_holder", start_holder, METH_O, NULL },
	{ "join_holder", join_holder, METH_NOARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = { PyModuleDef_HEAD_INIT, "native_ext", NULL, -1, methods };

#ifdef NATIVE_CXX
} /* namespace gilns */
#endif

EXTERN_C PyMODINIT_FUNC PyInit_native_ext(void)
{
#ifdef NATIVE_CXX
	return PyModule_Create(&gilns::module);
#else
	return PyModule_Create(&module);
#endif
}
