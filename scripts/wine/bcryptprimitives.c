/*
 * bcryptprimitives.dll for Wine 8 (Debian 12's), which lacks it.
 *
 * Rust's std (since 1.78) draws its random keys on Windows from
 * ProcessPrng in bcryptprimitives.dll, so every Rust program built for
 * Windows imports it, and Wine 8 refuses to load such a program at all
 * ("Library bcryptprimitives.dll ... not found"). This stand-in exports
 * ProcessPrng on top of RtlGenRandom (advapi32's SystemFunction036),
 * which Wine has. scripts/platforms builds it with mingw into the Wine
 * prefix's system32 before the Windows tests run; on Windows itself the
 * real DLL is used and this file plays no part.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T size)
{
    while (size > 0) {
        ULONG chunk = size > 0x10000000 ? 0x10000000 : (ULONG)size;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        size -= chunk;
    }
    return TRUE;
}
